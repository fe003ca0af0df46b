// The page's service worker, served at /sw.js so that its scope is the whole site (the page installs as an
// app with manifest.webmanifest). It caches nothing: every request goes to the server as usual. When the
// server cannot be reached, opening the page shows a short explanation instead of the browser's error page.
const OFFLINE_PAGE =
  '<!doctype html><meta charset="utf-8"><title>lazyslot: server unreachable</title>' +
  '<body style="font-family: sans-serif; margin: 2em"><h1>The lazyslot server is not reachable</h1>' +
  '<p>Start it again (<code>lazyslot serve</code>) and reload this page.</p></body>';

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));
self.addEventListener('fetch', (event) => {
  if (event.request.mode !== 'navigate') return;  // scripts, styles and API calls: the browser as usual
  event.respondWith(fetch(event.request).catch(() =>
    new Response(OFFLINE_PAGE, {status: 503, headers: {'Content-Type': 'text/html; charset=utf-8'}})));
});
