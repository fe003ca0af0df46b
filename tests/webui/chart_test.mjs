// Node tests for webui/js/chart.js pure helpers and SVG string rendering (run: node tests/webui/chart_test.mjs).
import assert from 'node:assert/strict';
import {
  LineChart, renderChartSvg, formatBytes, niceTicks, formatValue, formatTick, formatRelTime,
  escapeXml, timeTicks, windowPoints, eventColor,
} from '../../webui/js/chart.js';

const tests = [];
const test = (name, fn) => tests.push({ name, fn });

const GiB = 2 ** 30, MiB = 2 ** 20;
const T0 = 1_700_000_000_000;
const OPTS = { title: 'KV cache', unit: 'bytes', windowSeconds: 300, series: [{ key: 'rss', label: 'RSS', color: '#4e79a7' }] };

// points every `stepS` seconds ending at T0, values from fn(i)
function pts(count, stepS, fn) {
  return Array.from({ length: count }, (_, i) => ({ t: T0 - (count - 1 - i) * stepS * 1000, values: fn(i) }));
}
const attr = (svg, re) => { const m = svg.match(re); assert.ok(m, `no match for ${re}`); return m[1]; };
const seriesPath = (svg, key) => attr(svg, new RegExp(`<path class="chart-line" data-series="${key}"[^>]*?\\sd="([^"]*)"`));
const count = (s, sub) => s.split(sub).length - 1;
const plotRect = (svg) => {
  const m = svg.match(/<rect class="chart-plot" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"/);
  assert.ok(m, 'no plot rect');
  return { x: +m[1], y: +m[2], w: +m[3], h: +m[4] };
};
const ys = (d) => [...d.matchAll(/[ML]([\d.]+),([\d.]+)/g)].map((m) => +m[2]);

// ---- formatBytes
test('formatBytes brief examples', () => {
  assert.equal(formatBytes(0), '0 B');
  assert.equal(formatBytes(1536), '1.5 KiB');
  assert.equal(formatBytes(5 * MiB), '5.0 MiB');
  assert.equal(formatBytes(3.25 * GiB), '3.25 GiB');
});
test('formatBytes boundaries', () => {
  assert.equal(formatBytes(1023), '1023 B');
  assert.equal(formatBytes(1024), '1.0 KiB');
  assert.equal(formatBytes(2 ** 40), '1.0 TiB');
  assert.equal(formatBytes(812.4 * MiB), '812.4 MiB');
  assert.equal(formatBytes(1024 * 1024 - 1), '1.0 MiB'); // would round to 1024.0 KiB
  assert.equal(formatBytes(-1536), '-1.5 KiB');
  assert.equal(formatBytes(NaN), '–');
  assert.equal(formatBytes(Infinity), '–');
});
test('formatValue/formatTick by unit', () => {
  assert.equal(formatValue(12.5, 'rate'), '12.5/s');
  assert.equal(formatValue(42, 'number'), '42');
  assert.equal(formatValue(12345, 'number'), '12.3k');
  assert.equal(formatValue(null, 'bytes'), '–');
  assert.equal(formatTick(200 * MiB, 'bytes'), '200 MiB');
  assert.equal(formatTick(1.5 * GiB, 'bytes'), '1.5 GiB');
  assert.equal(formatTick(0, 'bytes'), '0 B');
});
test('formatRelTime and timeTicks', () => {
  assert.equal(formatRelTime(0), 'now');
  assert.equal(formatRelTime(300), '-5m');
  assert.equal(formatRelTime(30), '-30s');
  assert.equal(formatRelTime(7200), '-2h');
  assert.deepEqual(timeTicks(300, 6), [300, 240, 180, 120, 60, 0]);
  assert.deepEqual(timeTicks(300, 3), [240, 120, 0]);
  for (const t of [timeTicks(300, 3), timeTicks(45, 4), timeTicks(86400 * 3, 5)]) {
    assert.ok(t.length <= 6 && t.at(-1) === 0, JSON.stringify(t));
  }
});

// ---- niceTicks
function isRoundStep(step) {
  const m = step / 10 ** Math.floor(Math.log10(step));
  return [1, 2, 2.5, 5].some((x) => Math.abs(m - x) < 1e-9);
}
test('niceTicks properties over many ranges', () => {
  let seed = 12345;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let k = 0; k < 500; k++) {
    const mag = 10 ** Math.floor(rnd() * 16 - 6);
    const a = rnd() * mag * (rnd() < 0.2 ? -1 : 1), b = a + rnd() * mag * 3;
    const c = 2 + Math.floor(rnd() * 6);
    const t = niceTicks(a, b, c);
    const ctx = JSON.stringify({ a, b, c, t });
    assert.ok(t.length >= 2 && t.length <= c + 3, ctx);
    assert.ok(t[0] <= a && t.at(-1) >= b, `covers ${ctx}`);
    for (let i = 1; i < t.length; i++) assert.ok(t[i] > t[i - 1], `ascending ${ctx}`);
    const step = Number((t[1] - t[0]).toPrecision(10));
    assert.ok(isRoundStep(step), `round step ${ctx}`);
    for (const v of t) assert.ok(Math.abs(v / step - Math.round(v / step)) < 1e-6, `multiple of step ${ctx}`);
  }
});
test('niceTicks exact cases and degenerate input', () => {
  assert.deepEqual(niceTicks(0, 100, 5), [0, 20, 40, 60, 80, 100]);
  assert.deepEqual(niceTicks(0, 1, 4), [0, 0.25, 0.5, 0.75, 1]);
  assert.deepEqual(niceTicks(0, 0.3, 3), [0, 0.1, 0.2, 0.3]);
  assert.deepEqual(niceTicks(100, 0, 5), niceTicks(0, 100, 5));
  assert.deepEqual(niceTicks(0, 0, 4), [0, 0.25, 0.5, 0.75, 1]);
  const t = niceTicks(5, 5, 4);
  assert.ok(t[0] <= 5 && t.at(-1) >= 5 && t.length >= 2);
  assert.deepEqual(niceTicks(NaN, 5, 4), []);
});
test('niceTicks bytes: steps round in an IEC unit', () => {
  const t = niceTicks(0, 3.3 * GiB, 4, 'bytes');
  assert.ok(t[0] === 0 && t.at(-1) >= 3.3 * GiB);
  assert.deepEqual(t.map((v) => formatTick(v, 'bytes')), ['0 B', '1 GiB', '2 GiB', '3 GiB', '4 GiB']);
  assert.deepEqual(niceTicks(0, 1.5 * MiB, 3, 'bytes').map((v) => formatTick(v, 'bytes')), ['0 B', '512 KiB', '1 MiB', '1.5 MiB']);
  for (const v of niceTicks(0, 3, 4, 'bytes')) assert.ok(Number.isInteger(v)); // never fractional bytes
});

// ---- renderChartSvg
test('escapes every user-controlled string', () => {
  const evil = '<img src=x onerror=alert(1)>';
  const svg = renderChartSvg(600, 180,
    { ...OPTS, title: evil, series: [{ key: 'a"b', label: evil, color: '"><img src=x>' }] },
    pts(3, 1, () => ({ 'a"b': 5 })),
    [{ t: T0, kind: evil, label: evil }], [{ value: 10, label: evil, color: '"><img>' }]);
  assert.ok(!svg.includes('<img'), 'raw <img in output');
  assert.ok(svg.includes('&lt;img src=x onerror=alert(1)&gt;'));
  assert.ok(svg.includes('data-series="a&quot;b"'));
  assert.equal(escapeXml(`<&>"'`), '&lt;&amp;&gt;&quot;&#39;');
});
test('root attributes and data-points after windowing', () => {
  // 400 points 1 s apart: only the newest 301 (t in [T0-300s, T0]) are in the window.
  const svg = renderChartSvg(600, 180, OPTS, pts(400, 1, (i) => ({ rss: i * MiB })));
  assert.ok(svg.startsWith('<svg'));
  assert.match(svg, /^<svg[^>]*class="line-chart"/);
  assert.equal(attr(svg, /^<svg[^>]*data-points="(\d+)"/), '301');
  assert.equal(windowPoints(pts(400, 1, () => ({})), 300).points.length, 301);
  assert.ok(svg.includes('>-5m<') && svg.includes('>now<'));
  assert.ok(svg.includes('KV cache'));
});
test('data-last is the newest value; legend shows it formatted', () => {
  const svg = renderChartSvg(600, 180, OPTS, pts(10, 1, (i) => ({ rss: (i === 9 ? 812.4 : i) * MiB })));
  assert.equal(attr(svg, /data-series="rss" data-last="([^"]*)"/), String(812.4 * MiB));
  assert.ok(svg.includes('>RSS 812.4 MiB<'));
  // newest point null -> newest finite value still reported
  const svg2 = renderChartSvg(600, 180, OPTS, pts(3, 1, (i) => ({ rss: i === 2 ? null : 7 })));
  assert.equal(attr(svg2, /data-series="rss" data-last="([^"]*)"/), '7');
});
test('null gaps give separate path segments; NaN/negative/Infinity ignored', () => {
  const svg = renderChartSvg(600, 180, OPTS, pts(6, 1, (i) => ({ rss: i === 2 ? null : 100 + i })));
  assert.equal(count(seriesPath(svg, 'rss'), 'M'), 2);
  const noGap = renderChartSvg(600, 180, OPTS, pts(6, 1, (i) => ({ rss: 100 + i })));
  assert.equal(count(seriesPath(noGap, 'rss'), 'M'), 1);
  const bad = renderChartSvg(600, 180, OPTS, pts(7, 1, (i) => ({ rss: [1, NaN, 2, -5, 3, Infinity, 4][i] })));
  assert.equal(count(seriesPath(bad, 'rss'), 'M'), 4);
  assert.ok(!/NaN|Infinity/.test(bad));
  const missing = renderChartSvg(600, 180, OPTS, [{ t: T0 - 2000, values: { rss: 1 } }, { t: T0 - 1000, values: {} }, { t: T0, values: { rss: 2 } }]);
  assert.equal(count(seriesPath(missing, 'rss'), 'M'), 2);
});
test('events outside the window are dropped; colours by kind', () => {
  const events = [
    { t: T0 - 400_000, kind: 'trim', label: 'too old' },
    { t: T0 - 100_000, kind: 'trim', label: 'trimmed 3 blocks' },
    { t: T0, kind: 'park', label: 'parked' },
    { t: T0 + 5000, kind: 'resume', label: 'future' },
    { t: T0 - 1000, kind: 'constructor', label: 'odd kind' },
  ];
  const svg = renderChartSvg(600, 180, OPTS, pts(300, 1, () => ({ rss: MiB })), events);
  assert.equal(count(svg, 'class="chart-event"'), 3);
  assert.ok(svg.includes('<title>trimmed 3 blocks</title>') && !svg.includes('too old') && !svg.includes('future'));
  assert.ok(svg.includes('data-kind="park"'));
  assert.equal(eventColor('constructor'), '#9a9a9a');
  assert.notEqual(eventColor('trim'), eventColor('park'));
});
test('reference line is included in the y-range', () => {
  const data = pts(20, 1, () => ({ rss: 1 * GiB }));
  const svg = renderChartSvg(600, 180, OPTS, data, [], [{ value: 2 * GiB, label: 'KV budget' }]);
  const plot = plotRect(svg);
  const ly = +attr(svg, /class="chart-refline"[^>]*><line [^>]*y1="([\d.]+)"/);
  assert.ok(ly > plot.y && ly < plot.y + plot.h, `line y ${ly} inside plot ${JSON.stringify(plot)}`);
  const dataY = Math.min(...ys(seriesPath(svg, 'rss')));
  assert.ok(dataY > ly, 'data (1 GiB) drawn below the 2 GiB line');
  assert.ok(svg.includes('KV budget 2.0 GiB'));
  // without the line the data max sits near the top: at 1/1.1 of the plot height
  const plain = renderChartSvg(600, 180, OPTS, data);
  const p2 = plotRect(plain);
  assert.ok(Math.abs(Math.min(...ys(seriesPath(plain, 'rss'))) - (p2.y + p2.h * (1 - 1 / 1.1))) < 0.6);
});
test('empty input -> waiting for data with the title', () => {
  for (const p of [[], null, undefined, [{ t: NaN, values: {} }]]) {
    const svg = renderChartSvg(600, 180, OPTS, p, [], []);
    assert.ok(svg.includes('waiting for data') && svg.includes('KV cache'));
    assert.equal(attr(svg, /data-points="(\d+)"/), '0');
  }
  assert.ok(!renderChartSvg(600, 180, OPTS, pts(2, 1, () => ({ rss: 1 }))).includes('waiting for data'));
});
test('single point -> a dot', () => {
  const svg = renderChartSvg(600, 180, OPTS, [{ t: T0, values: { rss: 5 * MiB } }]);
  assert.equal(attr(svg, /data-points="(\d+)"/), '1');
  assert.equal(count(svg, '<circle class="chart-dot"'), 1);
});
test('thousands of points are decimated to <= ~2 per pixel column', () => {
  const data = pts(20000, 0.015, (i) => ({ rss: (i % 97) * MiB })); // 300 s of 15 ms samples
  const svg = renderChartSvg(400, 180, OPTS, data);
  assert.equal(attr(svg, /data-points="(\d+)"/), '20000');
  const plot = plotRect(svg);
  const n = count(seriesPath(svg, 'rss'), ',');
  assert.ok(n <= 2 * plot.w + 4 && n > plot.w, `${n} coords for ${plot.w}px`);
  assert.ok(Math.min(...ys(seriesPath(svg, 'rss'))) < plot.y + plot.h * 0.2, 'peaks kept');
});
test('stacked series and fill areas', () => {
  const opts = { ...OPTS, stacked: true, series: [{ key: 'a', label: 'A' }, { key: 'b', label: 'B', dashed: true }] };
  const svg = renderChartSvg(600, 180, opts, pts(5, 1, () => ({ a: 10 * MiB, b: 10 * MiB })));
  assert.equal(count(svg, 'class="chart-area"'), 2);
  assert.ok(Math.min(...ys(seriesPath(svg, 'b'))) < Math.min(...ys(seriesPath(svg, 'a'))), 'b stacked on a');
  assert.equal(attr(svg, /data-series="b" data-last="([^"]*)"/), String(10 * MiB));
  assert.ok(/data-series="b"[^>]*stroke-dasharray/.test(svg));
  const fill = renderChartSvg(600, 180, { ...OPTS, series: [{ key: 'rss', fill: true }] }, pts(5, 1, () => ({ rss: 1 })));
  assert.equal(count(fill, 'class="chart-area"'), 1);
  assert.equal(count(renderChartSvg(600, 180, OPTS, pts(5, 1, () => ({ rss: 1 }))), 'class="chart-area"'), 0);
});
test('rate unit tick labels', () => {
  const svg = renderChartSvg(600, 180, { ...OPTS, unit: 'rate' }, pts(5, 1, () => ({ rss: 12.5 })));
  assert.ok(svg.includes('>RSS 12.5/s<') && /\d\/s</.test(svg));
});
test('LineChart with a fake container (no DOM)', () => {
  const el = { clientWidth: 500, innerHTML: '' };
  const c = new LineChart(el, OPTS);
  assert.ok(el.innerHTML.includes('waiting for data'));
  c.update(pts(400, 1, () => ({ rss: MiB })), [{ t: T0, kind: 'trim', label: 'x' }], [{ value: 2 * MiB, label: 'cap' }]);
  assert.ok(el.innerHTML.includes('width="500"') && el.innerHTML.includes('data-points="301"'));
  assert.equal(c._data.points.length, 301, 'keeps only the window');
  c.destroy();
  assert.equal(el.innerHTML, '');
  c.update(pts(2, 1, () => ({ rss: 1 }))); // no throw after destroy
});

let failed = 0;
for (const { name, fn } of tests) {
  try { fn(); } catch (e) { failed++; console.error(`FAIL ${name}\n  ${e.message.split('\n').join('\n  ')}`); }
}
console.log(`chart_test: ${tests.length - failed}/${tests.length} passed${failed ? `, ${failed} FAILED` : ''}`);
process.exit(failed ? 1 : 0);
