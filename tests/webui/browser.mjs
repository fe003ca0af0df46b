// Shared by the browser tests: starts Debian's chromium headless through playwright-core, opens a page that
// fails the test on any script error or console error, and writes screenshots to $WEBUI_ARTIFACTS.
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import path from 'node:path';

export const artifacts = process.env.WEBUI_ARTIFACTS || path.resolve('webui-artifacts');
fs.mkdirSync(artifacts, { recursive: true });

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

export async function launch() {
  return chromium.launch({ executablePath: CHROMIUM, headless: true,
                           args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}

// A new page (its own context: empty localStorage) whose errors are collected in page.errors; expected ones
// (a status the test provokes) are filtered by the caller.
// init: a function run in the page before its own scripts (e.g. to put an API key in localStorage).
export async function openPage(browser, url, { viewport = { width: 1280, height: 800 }, init, initArg } = {}) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  if (init) await page.addInitScript(init, initArg);
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') page.errors.push(`console: ${m.text()}`); });
  await page.goto(url);
  return page;
}

export async function shot(page, name) {
  const file = path.join(artifacts, `${name}.png`);
  await page.screenshot({ path: file });
  console.log(`screenshot: ${file}`);
  return file;
}

// Steps print as they pass, so a failure's output shows how far the test got.
export async function step(name, fn) {
  const t0 = Date.now();
  await fn();
  console.log(`ok - ${name} (${Date.now() - t0} ms)`);
}

export function fail(message) {
  throw new Error(message);
}
