// The page against a server whose model never stops on its own (random weights, a large context) started with
// --idle-timeout: tokens stream into the page, Stop cancels the request on the server, oversized pastes are
// refused with the reason, the memory view's KV chart rises after a long request and falls back to zero after
// the idle timeout (with its events), and a server that dies mid-answer leaves the partial answer and a clear
// message. Env: LAZYSLOT_URL, LAZYSLOT_PID (killed at the end), WEBUI_ARTIFACTS.
import { launch, openPage, shot, step, fail } from './browser.mjs';

const url = process.env.LAZYSLOT_URL;
const pid = Number(process.env.LAZYSLOT_PID);
if (!url || !pid) fail('LAZYSLOT_URL and LAZYSLOT_PID are required');

async function metric(name) {
  const text = await (await fetch(new URL('/metrics', url))).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : NaN;
}

const browser = await launch();
try {
  const page = await openPage(browser, url);
  await step('the page loads and knows the model', async () => {
    await page.waitForSelector('body[data-ready="1"]', { timeout: 20000 });
    const models = await page.locator('#model-select option').allTextContents();
    if (models.length !== 1) fail(`expected one model in the picker, got ${JSON.stringify(models)}`);
  });

  await step('tokens stream into the page and Stop cancels the request', async () => {
    const cancelled = await metric('lazyslot:requests_cancelled_total');
    await page.fill('#prompt', 'Tell me everything.');
    await page.press('#prompt', 'Enter');
    await page.waitForSelector('body[data-streaming="1"]', { timeout: 5000 });
    const answer = page.locator('.msg.role-assistant .content').last();
    const lengths = [];
    for (let i = 0; i < 40 && new Set(lengths).size < 3; ++i) {
      lengths.push((await answer.innerText()).length);
      await page.waitForTimeout(100);
    }
    if (new Set(lengths.filter((n) => n > 0)).size < 2) fail(`the answer did not grow while streaming: ${lengths}`);
    if (!(await page.isVisible('#stop'))) fail('no Stop button while streaming');
    await page.click('#stop');
    await page.waitForSelector('body[data-streaming="0"]', { timeout: 5000 });
    const note = await page.locator('.msg.role-assistant .note').last().innerText();
    if (note !== 'stopped') fail(`expected the answer marked stopped, got '${note}'`);
    const kept = (await answer.innerText()).length;
    if (kept === 0) fail('the partial answer was not kept');
    // The server saw the client go and cancelled the request (its slot is free for others).
    for (let i = 0; i < 50 && (await metric('lazyslot:requests_cancelled_total')) <= cancelled; ++i) {
      await page.waitForTimeout(100);
    }
    if ((await metric('lazyslot:requests_cancelled_total')) <= cancelled) fail('the server did not cancel the request');
  });

  await step('an oversized paste is refused with the reason', async () => {
    await page.evaluate((n) => {
      const dt = new DataTransfer();
      dt.setData('text/plain', 'x'.repeat(n));
      document.querySelector('#prompt').dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
    }, 1_200_000);
    const text = await page.locator('#error-text').innerText();
    if (!/too long: 1,200,000 characters/.test(text)) fail(`no clear message for a huge paste: '${text}'`);
    if ((await page.inputValue('#prompt')).length !== 0) fail('the huge paste reached the composer');
    await page.click('#error-close');
    // Longer than a slot's context: counted with /tokenize and refused in words.
    await page.fill('#prompt', 'word '.repeat(20000));
    await page.evaluate(() => {
      const dt = new DataTransfer();
      dt.setData('text/plain', ' and more');
      document.querySelector('#prompt').dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
    });
    await page.waitForFunction(() => /too long for the model/.test(document.querySelector('#error-text').textContent), null, { timeout: 10000 });
    const note = await page.locator('#composer-note').innerText();
    if (!/tokens of the [\d,]+-token context/.test(note)) fail(`no token count under the composer: '${note}'`);
    await page.fill('#prompt', '');
    await page.click('#error-close');
  });

  await step('the memory chart rises after a long request and falls after --idle-timeout', async () => {
    await page.click('#tab-memory');
    await page.waitForSelector('#memory-view[data-stream="live"]', { timeout: 10000 });
    const kv = async () => Number(await page.getAttribute('#mem-kv', 'data-bytes'));
    // The stopped request's KV is released by the idle timeout first.
    await page.waitForFunction(() => Number(document.querySelector('#mem-kv')?.dataset.bytes) === 0, null, { timeout: 15000 });
    const res = await fetch(new URL('/completion', url), {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: 'memory '.repeat(3000), n_predict: 4 }),
    });
    if (!res.ok) fail(`the long request failed: ${res.status} ${await res.text()}`);
    await page.waitForFunction(() => Number(document.querySelector('#mem-kv')?.dataset.bytes) > 0, null, { timeout: 10000 });
    const high = await kv();
    const row = page.locator('#slot-table tr[data-slot="0"]');
    if ((await row.count()) !== 1) fail('no row for slot 0 in the slot table');
    const tokens = await row.locator('td').nth(3).innerText();
    if (!/^[1-9][\d,]* \/ 16,384$/.test(tokens)) fail(`slot 0 holds '${tokens}' tokens`);
    const series = page.locator('#chart-kv-0 [data-series="slot0"]');
    if (Number(await series.getAttribute('data-last')) <= 0) fail('the KV chart did not rise');
    await page.waitForSelector('#event-log li[data-kind="first_commit"]', { timeout: 5000 });
    await shot(page, 'memory-high');
    await page.waitForFunction(() => Number(document.querySelector('#mem-kv')?.dataset.bytes) === 0, null, { timeout: 15000 });
    await page.waitForSelector('#event-log li[data-kind="idle_release"]', { timeout: 5000 });
    if (Number(await series.getAttribute('data-last')) !== 0) fail('the KV chart did not fall to zero');
    const points = Number(await page.getAttribute('#chart-kv-0 svg', 'data-points'));
    if (points < 4) fail(`too few samples drawn: ${points}`);
    console.log(`KV committed rose to ${high} bytes and fell to 0; ${points} samples drawn`);
    await page.waitForTimeout(600);
    await shot(page, 'memory');
  });

  await step('a server that goes away mid-answer: the partial answer stays, with a clear message', async () => {
    await page.click('#tab-chat');
    await page.fill('#prompt', 'One more, please.');
    await page.press('#prompt', 'Enter');
    const answer = page.locator('.msg.role-assistant .content').last();
    await page.waitForFunction(() => {
      const all = document.querySelectorAll('.msg.role-assistant .content');
      return all.length && all[all.length - 1].textContent.length > 20;
    }, null, { timeout: 10000 });
    process.kill(pid, 'SIGKILL');
    await page.waitForSelector('body[data-streaming="0"]', { timeout: 10000 });
    const banner = await page.locator('#error-text').innerText();
    if (!/Connection lost/.test(banner)) fail(`no clear message when the server died: '${banner}'`);
    if ((await answer.innerText()).length <= 20) fail('the partial answer was lost');
    await page.waitForSelector('.msg.role-assistant .error-note', { timeout: 2000 });
    const saved = await page.evaluate(() => localStorage.getItem('lazyslot.conversations.v1'));
    if (!saved.includes('Connection lost')) fail('the broken answer was not saved with its note');
  });

  if (page.errors.some((e) => !/Failed to load resource|ERR_/.test(e))) fail(`page errors: ${page.errors.join('\n')}`);
} finally {
  await browser.close();
}
console.log('webui_stream_test: passed');
