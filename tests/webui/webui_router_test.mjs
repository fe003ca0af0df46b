// The model picker in router mode: it lists every model the router serves, loaded or not, with its status;
// picking one that is not loaded loads it (POST /models/load) and the next message goes to it.
// Env: LAZYSLOT_URL (a router with two models, none loaded), WEBUI_ARTIFACTS.
import { launch, openPage, shot, step, fail } from './browser.mjs';

const url = process.env.LAZYSLOT_URL;
if (!url) fail('LAZYSLOT_URL is required');

async function status(id) {
  const list = await (await fetch(new URL('/v1/models', url))).json();
  return list.data.find((m) => m.id === id)?.status?.value;
}

const browser = await launch();
try {
  const page = await openPage(browser, url);
  let ids = [];
  await step('the picker lists every model with its status', async () => {
    await page.waitForSelector('#model-select option', { state: 'attached', timeout: 20000 });
    await page.waitForFunction(() => document.querySelectorAll('#model-select option').length === 2, null, { timeout: 10000 });
    ids = await page.locator('#model-select option').evaluateAll((os) => os.map((o) => o.value));
    const labels = await page.locator('#model-select option').allTextContents();
    if (!labels.every((l) => /\((unloaded|loaded|sleeping|loading)\)$/.test(l))) fail(`labels without status: ${labels}`);
    await page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
    for (const id of ids) {
      if ((await status(id)) !== 'unloaded') fail(`opening the page loaded ${id}`);
    }
  });

  await step('picking a model that is not loaded loads it', async () => {
    const other = ids[1];
    if ((await status(other)) === 'loaded') fail(`${other} was loaded before it was picked`);
    await page.selectOption('#model-select', other);
    await page.waitForFunction((id) => {
      const o = [...document.querySelectorAll('#model-select option')].find((x) => x.value === id);
      return o && o.dataset.status === 'loaded';
    }, other, { timeout: 30000 });
    if ((await status(other)) !== 'loaded') fail(`the server says ${other} is ${await status(other)}`);
  });

  await step('a message goes to the picked model', async () => {
    const requests = [];
    page.on('request', (r) => { if (r.url().endsWith('/v1/chat/completions')) requests.push(JSON.parse(r.postData())); });
    await page.click('#open-settings');
    await page.fill('#set-max_tokens', '16');
    await page.click('#settings-save');
    await page.fill('#prompt', 'Once upon a time');
    await page.click('#send');
    await page.waitForSelector('body[data-streaming="0"] .msg.role-assistant', { timeout: 30000 });
    if (requests[0]?.model !== ids[1]) fail(`the request named ${requests[0]?.model}, not ${ids[1]}`);
    const err = await page.locator('.msg.role-assistant .error-note').count();
    if (err) fail(await page.locator('.msg.role-assistant .error-note').innerText());
    await shot(page, 'router');
  });

  if (page.errors.length) fail(`page errors: ${page.errors.join('\n')}`);
} finally {
  await browser.close();
}
console.log('webui_router_test: passed');
