// The page under --api-key: its files load without the key, the page asks for it, a wrong key is refused
// with a clear message and asked for again, the right one is kept in the browser (no prompt after a reload)
// and the memory stream and the chat work with it. Env: LAZYSLOT_URL, LAZYSLOT_API_KEY, WEBUI_ARTIFACTS.
import { launch, openPage, shot, step, fail } from './browser.mjs';

const url = process.env.LAZYSLOT_URL;
const key = process.env.LAZYSLOT_API_KEY;
if (!url || !key) fail('LAZYSLOT_URL and LAZYSLOT_API_KEY are required');

const browser = await launch();
try {
  const page = await openPage(browser, url);
  await step('the page loads without the key and asks for it', async () => {
    await page.waitForSelector('#key-dialog[open]', { timeout: 20000 });
    await shot(page, 'api-key');
  });

  await step('a wrong key is refused with the reason and asked for again', async () => {
    await page.fill('#key-input', 'not-the-key');
    await page.click('#key-save');
    await page.waitForFunction(() => document.querySelector('#key-dialog').open &&
      /refused this API key/.test(document.querySelector('#key-reason').textContent), null, { timeout: 10000 });
  });

  await step('the right key works and is kept across a reload', async () => {
    await page.fill('#key-input', key);
    await page.click('#key-save');
    await page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
    await page.reload();
    await page.waitForSelector('body[data-ready="1"]', { timeout: 10000 });
    if (await page.locator('#key-dialog[open]').count()) fail('asked for the key again after a reload');
    await page.fill('#prompt', 'Once upon a time');
    await page.click('#send');
    await page.waitForSelector('body[data-streaming="0"] .msg.role-assistant', { timeout: 30000 });
    if (await page.locator('.error-note').count()) fail(await page.locator('.error-note').innerText());
    await page.click('#tab-memory');
    await page.waitForSelector('#memory-view[data-stream="live"]', { timeout: 10000 });
  });

  // The 401s the test provoked are the only resource errors allowed.
  const other = page.errors.filter((e) => !/status of 401/.test(e));
  if (other.length) fail(`page errors: ${other.join('\n')}`);
} finally {
  await browser.close();
}
console.log('webui_key_test: passed');
