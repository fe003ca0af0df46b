// The page's chat against a small story model (TinyLLama-v0): the settings default to the server's /props and
// reach the request, a conversation survives a reload, regenerate and edit make branches that ‹ › switch
// between, continue extends the last answer, search finds conversations, and export then import brings them
// back; an imported answer shows Markdown, code with a copy button, reasoning collapsed and tool calls, and
// its HTML stays inert. Env: LAZYSLOT_URL, WEBUI_ARTIFACTS.
import fs from 'node:fs';
import { launch, openPage, shot, step, fail } from './browser.mjs';

const url = process.env.LAZYSLOT_URL;
if (!url) fail('LAZYSLOT_URL is required');

const props = await (await fetch(new URL('/props', url))).json();
const browser = await launch();
try {
  const page = await openPage(browser, url);
  page.on('dialog', (d) => d.accept());
  const answers = page.locator('.msg.role-assistant .content');
  const idle = () => page.waitForSelector('body[data-streaming="0"]', { timeout: 30000 });
  const send = async (text) => {
    await page.fill('#prompt', text);
    await page.click('#send');
    await page.waitForSelector('body[data-streaming="1"]', { timeout: 5000 }).catch(() => {});
    await idle();
  };

  await step('the settings default to the server\'s and reach the request', async () => {
    await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
    await page.click('#open-settings');
    const placeholder = Number(await page.getAttribute('#set-temperature', 'placeholder'));
    const temp = props.default_generation_settings.params.temperature;
    if (Math.abs(placeholder - temp) > 1e-3) fail(`temperature placeholder ${placeholder}, /props says ${temp}`);
    await page.fill('#set-max_tokens', '12');
    await page.fill('#set-system', 'You tell short stories.');
    await page.click('#settings-save');
    const requests = [];
    page.on('request', (r) => { if (r.url().endsWith('/v1/chat/completions')) requests.push(JSON.parse(r.postData())); });
    await send('Once upon a time there was a little dog');
    const body = requests[0];
    if (!body || body.max_tokens !== 12 || !body.stream) fail(`request body: ${JSON.stringify(body)}`);
    if (body.messages[0].role !== 'system' || body.messages[0].content !== 'You tell short stories.') {
      fail(`no system prompt in ${JSON.stringify(body.messages)}`);
    }
    if ((await answers.last().innerText()).trim().length === 0) fail('empty answer');
  });

  let first = '';
  await step('a conversation survives a reload', async () => {
    first = await answers.last().innerText();
    await page.reload();
    await page.waitForSelector('body[data-ready="1"]');
    const items = await page.locator('.conv-item').count();
    if (items !== 1) fail(`expected one conversation after reload, got ${items}`);
    if ((await answers.last().innerText()) !== first) fail('the answer changed across a reload');
  });

  await step('regenerate makes a second branch; ‹ › switch between them', async () => {
    await page.click('.msg.role-assistant .act-regenerate');
    await idle();
    const pos = await page.locator('.msg.role-assistant .branch-pos').innerText();
    if (pos !== '2/2') fail(`branch position after regenerate: ${pos}`);
    await page.click('.msg.role-assistant .branch-prev');
    if ((await answers.last().innerText()) !== first) fail('‹ did not bring back the first answer');
    await page.click('.msg.role-assistant .branch-next');
  });

  await step('editing a message branches there and answers the edit', async () => {
    await page.click('.msg.role-user .act-edit');
    await page.fill('.msg.role-user .edit-area', 'Once upon a time there was a big cat');
    await page.click('.msg.role-user .edit-save');
    await idle();
    const user = await page.locator('.msg.role-user .content').innerText();
    if (user !== 'Once upon a time there was a big cat') fail(`edited message shows '${user}'`);
    if ((await page.locator('.msg.role-user .branch-pos').innerText()) !== '2/2') fail('no branch on the edited message');
    if ((await page.locator('.msg.role-assistant').count()) !== 1) fail('the edit did not get one answer');
  });

  await step('continue sends the last answer to be carried on and appends to it', async () => {
    const stored = () => page.evaluate(() => {
      const c = window.lazyslotUi.state.conv;
      return c.messages[c.leaf].content;
    });
    const before = await stored();
    const requests = [];
    page.on('request', (r) => { if (r.url().endsWith('/v1/chat/completions')) requests.push(JSON.parse(r.postData())); });
    await page.click('.msg.role-assistant .act-continue');
    await idle();
    const last = requests[0]?.messages.at(-1);
    if (last?.role !== 'assistant' || last.content !== before) fail(`continue sent ${JSON.stringify(last)}`);
    const after = await stored();
    // The model may end at once (its end-of-text token); what it adds goes after what was there.
    if (!after.startsWith(before)) fail(`continue replaced the answer:\n${before}\n---\n${after}`);
    if ((await page.locator('.msg.role-assistant').count()) !== 1) fail('continue made a new message');
    console.log(`continue: ${before.length} -> ${after.length} characters`);
  });

  let exported = '';
  await step('search, export and import', async () => {
    await page.click('#new-chat');
    await page.click('#open-settings');
    await page.fill('#set-max_tokens', '60');
    await page.click('#settings-save');
    await send('Once upon a time, a girl looked at the moon');
    await shot(page, 'chat');
    if ((await page.locator('.conv-item').count()) !== 2) fail('expected two conversations');
    await page.fill('#search', 'moon');
    if ((await page.locator('.conv-item').count()) !== 1) fail('search for "moon" did not find exactly one');
    await page.fill('#search', 'zebra-not-there');
    if ((await page.locator('.conv-item').count()) !== 0) fail('search found a conversation it should not');
    await page.fill('#search', '');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export')]);
    exported = fs.readFileSync(await download.path(), 'utf8');
    const parsed = JSON.parse(exported);
    if (parsed.conversations.length !== 2) fail(`export holds ${parsed.conversations.length} conversations`);
    await page.evaluate(() => localStorage.removeItem('lazyslot.conversations.v1'));
    await page.reload();
    if ((await page.locator('.conv-item').count()) !== 0) fail('conversations left after clearing storage');
    const file = `${process.env.WEBUI_ARTIFACTS || '.'}/export.json`;
    fs.writeFileSync(file, exported);
    await page.setInputFiles('#import-file', file);
    await page.waitForFunction(() => document.querySelectorAll('.conv-item').length === 2);
    fs.writeFileSync(file, '{"format": "something else"}');
    await page.setInputFiles('#import-file', file);
    if (!/Import failed: not a lazyslot export/.test(await page.locator('#error-text').innerText())) fail('no message for a bad import');
    await page.click('#error-close');
  });

  await step('an answer with Markdown, code, reasoning and tool calls renders; its HTML stays inert', async () => {
    const conv = JSON.parse(exported).conversations[0];
    const leaf = conv.messages[conv.leaf];
    leaf.content = '## Plan\n\nSome **bold** and `code`:\n\n```python\ndef f(x):\n    return x + 1  # add\n```\n\n' +
                   '| a | b |\n|---|--:|\n| 1 | 2 |\n\n<img src=x onerror="window.__pwned=1"> [link](javascript:window.__pwned=2)';
    leaf.reasoning = 'First I think about it.';
    leaf.tool_calls = [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }];
    conv.id = 'rendered';
    conv.title = 'Rendering check';
    const file = `${process.env.WEBUI_ARTIFACTS || '.'}/render.json`;
    fs.writeFileSync(file, JSON.stringify({ format: 'lazyslot-conversations', version: 1, conversations: [conv] }));
    await page.setInputFiles('#import-file', file);
    await page.click('#error-close');
    await page.click('.conv-item[data-id="rendered"]');
    const msg = page.locator('.msg.role-assistant').last();
    if ((await msg.locator('h2').innerText()) !== 'Plan') fail('no heading');
    if ((await msg.locator('.code-block .code-lang').innerText()) !== 'python') fail('no code block');
    if ((await msg.locator('.code-block .tok-kw').count()) === 0) fail('code not highlighted');
    if ((await msg.locator('td[style*="right"]').count()) !== 1) fail('table alignment lost');
    if (await msg.locator('details.reasoning').getAttribute('open') !== null) fail('reasoning not collapsed');
    if ((await msg.locator('.tool-call .tool-name').innerText()) !== 'get_weather') fail('tool call not shown');
    if ((await msg.locator('img').count()) !== 0) fail('raw HTML became an element');
    if ((await msg.locator('a[href^="javascript"]').count()) !== 0) fail('a javascript: link was made');
    if (await page.evaluate(() => window.__pwned)) fail('script ran from a message');
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await msg.locator('.copy-code').click();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    if (!copied.startsWith('def f(x):')) fail(`copy button copied '${copied}'`);
    await shot(page, 'chat-rendering');
  });

  if (page.errors.length) fail(`page errors: ${page.errors.join('\n')}`);
} finally {
  await browser.close();
}
console.log('webui_chat_test: passed');
