// The page's MCP client through the server's --ui-mcp-proxy, against a small MCP server (Streamable HTTP)
// started here: the page connects (initialize with a session id, tools/list), offers the server's tool to the
// model, and runs a call through the proxy (tools/call answered as Server-Sent Events) whose result goes back
// to the model. The MCP server never sees lazyslot's API key. The model's answers are scripted (page.route),
// since the test models cannot choose tools. Env: LAZYSLOT_URL, LAZYSLOT_API_KEY, WEBUI_ARTIFACTS.
import http from 'node:http';
import { launch, openPage, step, fail } from './browser.mjs';

const url = process.env.LAZYSLOT_URL;
const key = process.env.LAZYSLOT_API_KEY;
if (!url || !key) fail('LAZYSLOT_URL and LAZYSLOT_API_KEY are required');

const seen = [];
const mcp = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    const msg = JSON.parse(body || '{}');
    seen.push({ method: msg.method, headers: req.headers });
    const reply = (result) => JSON.stringify({ jsonrpc: '2.0', id: msg.id, result });
    if (msg.method === 'initialize') {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Mcp-Session-Id': 'session-7' });
      res.end(reply({ protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'adder', version: '1' } }));
    } else if (msg.method === 'notifications/initialized') {
      res.writeHead(202);
      res.end();
    } else if (msg.method === 'tools/list') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(reply({ tools: [{ name: 'add', description: 'Adds two numbers',
                                inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } },
                                               required: ['a', 'b'] } }] }));
    } else if (msg.method === 'tools/call') {
      const { a, b } = msg.params.arguments;
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.end(`event: message\ndata: ${reply({ content: [{ type: 'text', text: `sum is ${a + b}` }] })}\n\n`);
    } else {
      res.writeHead(400);
      res.end();
    }
  });
});
await new Promise((r) => mcp.listen(0, '127.0.0.1', r));
const mcpUrl = `http://127.0.0.1:${mcp.address().port}/mcp`;

const chunk = (delta, finish = null) => ({ id: 'x', object: 'chat.completion.chunk', created: 0, model: 'm',
                                           choices: [{ index: 0, delta, finish_reason: finish }] });
const browser = await launch();
try {
  const page = await openPage(browser, url, { init: (k) => localStorage.setItem('lazyslot.apiKey', k), initArg: key });
  const requests = [];
  await page.route('**/v1/chat/completions', async (route) => {
    requests.push(JSON.parse(route.request().postData()));
    const events = requests.length === 1
      ? [chunk({ tool_calls: [{ index: 0, id: 'call_9', type: 'function', function: { name: 'add', arguments: '{"a": 2, "b": 3}' } }] }),
         chunk({}, 'tool_calls')]
      : [chunk({ content: 'Two and three make five.' }), chunk({}, 'stop')];
    await route.fulfill({ status: 200, headers: { 'Content-Type': 'text/event-stream' },
                          body: events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n' });
  });

  await step('the page connects to the MCP server through the proxy and lists its tool', async () => {
    await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
    await page.click('#open-settings');
    await page.fill('#set-mcp', mcpUrl);
    await page.click('#settings-save');
    await page.waitForSelector('body[data-mcp-tools="1"]', { timeout: 10000 });
    const methods = seen.map((s) => s.method);
    if (JSON.stringify(methods) !== JSON.stringify(['initialize', 'notifications/initialized', 'tools/list'])) {
      fail(`MCP requests: ${methods}`);
    }
  });

  await step('a call of the MCP tool runs through the proxy and its result reaches the model', async () => {
    await page.fill('#prompt', 'What is 2 + 3?');
    await page.click('#send');
    await page.waitForFunction(() => document.querySelectorAll('.msg.role-assistant').length === 2 &&
      document.body.dataset.streaming === '0', null, { timeout: 20000 });
    if (!(requests[0].tools || []).some((t) => t.function.name === 'add')) fail('the MCP tool was not offered');
    const result = requests[1].messages.at(-1);
    if (result.role !== 'tool' || result.tool_call_id !== 'call_9' || result.content !== 'sum is 5') {
      fail(`tool message: ${JSON.stringify(result)}`);
    }
    const call = seen.find((s) => s.method === 'tools/call');
    if (call.headers['mcp-session-id'] !== 'session-7') fail(`no session id on tools/call: ${JSON.stringify(call.headers)}`);
  });

  await step('the MCP server never saw the API key or any header the page did not name', async () => {
    for (const s of seen) {
      if (s.headers.authorization || s.headers['x-api-key'] || s.headers.cookie) fail(`${s.method} got ${JSON.stringify(s.headers)}`);
    }
  });

  if (page.errors.length) fail(`page errors: ${page.errors.join('\n')}`);
} finally {
  await browser.close();
  mcp.close();
}
console.log('webui_mcp_test: passed');
