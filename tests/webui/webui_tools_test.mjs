// The page with the server's built-in tools (--tools read_file,file_glob_search --tools-dir DIR): the tools of
// GET /tools are offered to the model, a tool call in an answer runs on the server (POST /tools) and its
// result goes back to the model as a tool message, a call that reaches outside DIR gets the server's refusal,
// never the file, and unticking a tool in the settings stops offering it. The test models cannot choose tools,
// so the model's three answers are scripted here (page.route on /v1/chat/completions); the tools run for
// real. Env: LAZYSLOT_URL, WEBUI_ARTIFACTS.
import { launch, openPage, shot, step, fail } from './browser.mjs';

const url = process.env.LAZYSLOT_URL;
if (!url) fail('LAZYSLOT_URL is required');

const chunk = (delta, finish = null) => ({ id: 'x', object: 'chat.completion.chunk', created: 0, model: 'm',
                                           choices: [{ index: 0, delta, finish_reason: finish }] });
const toolCall = (id, name, args) => chunk({ tool_calls: [{ index: 0, id, type: 'function',
                                                             function: { name, arguments: args } }] });

const browser = await launch();
try {
  const page = await openPage(browser, url);
  const requests = [];
  await page.route('**/v1/chat/completions', async (route) => {
    const body = JSON.parse(route.request().postData());
    requests.push(body);
    const n = requests.length;
    const events = n === 1 ? [toolCall('call_1', 'read_file', '{"path": "marker.txt"}'), chunk({}, 'tool_calls')]
                 : n === 2 ? [toolCall('call_2', 'read_file', '{"path": "../secret.txt"}'), chunk({}, 'tool_calls')]
                 : [chunk({ content: 'I read the marker; the other file is outside my folder.' }), chunk({}, 'stop')];
    await route.fulfill({ status: 200, headers: { 'Content-Type': 'text/event-stream' },
                          body: events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n' });
  });

  await step('the server\'s tools are offered to the model', async () => {
    await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
    await page.fill('#prompt', 'What does marker.txt say?');
    await page.click('#send');
    await page.waitForFunction(() => document.querySelectorAll('.msg.role-assistant').length === 3 &&
      document.body.dataset.streaming === '0', null, { timeout: 20000 });
    const names = (requests[0].tools || []).map((t) => t.function.name).sort();
    if (JSON.stringify(names) !== JSON.stringify(['file_glob_search', 'read_file'])) fail(`tools offered: ${names}`);
  });

  await step('a tool call runs on the server and its result goes back to the model', async () => {
    const msgs = requests[1].messages;
    const call = msgs.at(-2);
    const result = msgs.at(-1);
    if (call.role !== 'assistant' || call.tool_calls?.[0]?.function?.name !== 'read_file') fail(`no call: ${JSON.stringify(call)}`);
    if (result.role !== 'tool' || result.tool_call_id !== 'call_1') fail(`no tool message: ${JSON.stringify(result)}`);
    if (!result.content.includes('MARKER-7d1f')) fail(`the file's text did not reach the model: ${result.content}`);
  });

  await step('a call outside the tools folder gets the refusal, never the file', async () => {
    const result = requests[2].messages.at(-1);
    if (result.role !== 'tool' || !/outside the tools folder/.test(result.content)) fail(`expected a refusal: ${result.content}`);
    if (requests.some((r) => JSON.stringify(r).includes('SECRET-3a9c'))) fail('the secret file reached a request');
    const shown = await page.locator('.msg.role-tool').count();
    if (shown !== 2) fail(`expected two tool results on the page, got ${shown}`);
    const last = await page.locator('.msg.role-assistant .content').last().innerText();
    if (!/I read the marker/.test(last)) fail(`final answer: ${last}`);
    await page.locator('.msg.role-tool details').first().evaluate((d) => { d.open = true; });
    await shot(page, 'tools');
  });

  await step('a tool unticked in the settings is no longer offered', async () => {
    await page.click('#open-settings');
    await page.uncheck('#set-tools input[value="read_file"]');
    await page.click('#settings-save');
    await page.fill('#prompt', 'And now?');
    await page.click('#send');
    await page.waitForFunction((n) => document.querySelectorAll('.msg.role-assistant').length >= 1 &&
      document.body.dataset.streaming === '0', null, { timeout: 20000 });
    await page.waitForTimeout(300);
    const names = (requests.at(-1).tools || []).map((t) => t.function.name);
    if (JSON.stringify(names) !== JSON.stringify(['file_glob_search'])) fail(`tools offered after unticking: ${names}`);
  });

  if (page.errors.length) fail(`page errors: ${page.errors.join('\n')}`);
} finally {
  await browser.close();
}
console.log('webui_tools_test: passed');
