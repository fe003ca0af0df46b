// chart.js - dependency-free SVG line/area chart for lazyslot's live memory view (ES module; pure helpers also run in Node).
//
// Usage:  const c = new LineChart(el, { title, unit, windowSeconds, series, stacked, height });
//         c.update(points, events, lines);  c.destroy();
// The SVG is built as a string by renderChartSvg() so it can be tested without a DOM.
//
// Attributes read by browser tests (keep exact):
//   <svg class="line-chart" data-points="N">   N = points inside the time window (before per-pixel decimation)
//   <path data-series="KEY" data-last="V">      V = newest finite, non-negative value of the series in the window
//                                               ("" when none); always present, one per series
//   <g class="chart-event" data-kind="KIND">    one per event inside the window; <title> = label
//   <g class="chart-refline" data-value="V">    one per horizontal reference line
//   <rect class="chart-plot" ...>               the plot area

const FONT = "system-ui, -apple-system, 'Segoe UI', sans-serif";
const CHAR_W = 6.2; // rough width of one character at 11px, used for layout estimates
const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#9c755f'];
const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
const GREY = '#9a9a9a';

export const EVENT_COLORS = Object.freeze({
  first_commit: '#59a14f',
  trim: '#f28e2b',
  idle_release: '#76b7b2',
  weights_released: '#e15759',
  weights_reloaded: '#4e79a7',
  model_loaded: '#b07aa1',
  model_unloaded: '#9c755f',
  park: '#edc948',
  resume: '#ff9da7',
});

export function eventColor(kind) {
  return Object.prototype.hasOwnProperty.call(EVENT_COLORS, kind) ? EVENT_COLORS[kind] : GREY;
}

/** Escape text for use in SVG/HTML text content and double- or single-quoted attributes. */
export function escapeXml(s) {
  const map = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
  return String(s ?? '').replace(/[&<>"']/g, (c) => map[c]);
}

/**
 * IEC byte formatting. Rule (documented, consistent):
 *  - below 1 KiB: integer bytes ("0 B", "1023 B");
 *  - otherwise the largest IEC unit in which the value is >= 1;
 *    values < 10 get two decimals with one trailing zero dropped ("1.5 KiB", "5.0 MiB", "3.25 GiB"),
 *    values >= 10 get one decimal ("812.4 MiB", "1000.0 MiB");
 *  - a value that would round to 1024 of a unit is shown in the next unit ("1.0 MiB", not "1024.0 KiB");
 *  - negatives keep their sign; NaN/Infinity -> "–".
 */
export function formatBytes(n) {
  n = Number(n);
  if (!Number.isFinite(n)) return '–';
  const sign = n < 0 ? '-' : '';
  let a = Math.abs(n);
  let k = 0;
  while (k < UNITS.length - 1 && a >= 1024) { a /= 1024; k++; }
  const fmt = () => (k === 0 ? String(Math.round(a))
    : a < 10 ? a.toFixed(2).replace(/(\.\d)0$/, '$1') : a.toFixed(1));
  let s = fmt();
  if (parseFloat(s) >= 1024 && k < UNITS.length - 1) { a /= 1024; k++; s = fmt(); }
  return `${sign}${s} ${UNITS[k]}`;
}

function trimZeros(s) {
  return s.includes('.') ? s.replace(/\.?0+$/, '') : s;
}

/** Plain number: up to 2 decimals, k/M/G suffix from 10 000 up ("12.5", "812", "12.3k", "4.1M"). */
export function formatNumber(v) {
  v = Number(v);
  if (!Number.isFinite(v)) return '–';
  const a = Math.abs(v);
  for (const [lim, d, suffix] of [[1e9, 1e9, 'G'], [1e6, 1e6, 'M'], [1e4, 1e3, 'k']]) {
    if (a >= lim) return short(v / d) + suffix;
  }
  return short(v);
  function short(x) {
    const ax = Math.abs(x);
    if (ax > 0 && ax < 0.01) return String(Number(x.toPrecision(2)));
    return trimZeros(x.toFixed(ax >= 100 ? 0 : ax >= 10 ? 1 : 2));
  }
}

/** Value formatted for a legend entry: bytes -> formatBytes, rate -> "12.5/s", number -> plain. */
export function formatValue(v, unit) {
  if (v == null || !Number.isFinite(v)) return '–';
  if (unit === 'bytes') return formatBytes(v);
  if (unit === 'rate') return `${formatNumber(v)}/s`;
  return formatNumber(v);
}

/** Axis tick label: like formatValue, but byte labels drop redundant zeros ("200 MiB", "1.5 GiB"). */
export function formatTick(v, unit) {
  if (unit !== 'bytes') return formatValue(v, unit);
  return formatBytes(v).replace(/(\.\d*?)0+ /, '$1 ').replace(/\. /, ' ');
}

/** Relative time label for an x tick: 0 -> "now", 300 -> "-5m", 30 -> "-30s", 7200 -> "-2h". */
export function formatRelTime(secondsAgo) {
  const s = Math.round(Math.abs(Number(secondsAgo) || 0));
  if (s === 0) return 'now';
  if (s % 3600 === 0) return `-${s / 3600}h`;
  if (s % 60 === 0) return `-${s / 60}m`;
  return `-${s}s`;
}

function niceStep(raw) {
  const exp = Math.floor(Math.log10(raw));
  const base = 10 ** exp;
  const f = raw / base;
  const m = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
  return Number((m * base).toPrecision(12));
}

/**
 * Round tick values covering [min, max]: ascending, first <= min, last >= max, evenly spaced by a step
 * of 1, 2, 2.5 or 5 x 10^k; about `count` intervals. With unit === 'bytes' the step is chosen in the
 * IEC unit of the range (e.g. 0, 200 MiB, 400 MiB ... or 0, 512 KiB, 1 MiB ...) and is at least 1 byte.
 */
export function niceTicks(min, max, count = 5, unit) {
  min = Number(min); max = Number(max);
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  count = Math.max(1, Math.floor(Number(count)) || 5);
  if (min > max) [min, max] = [max, min];
  if (min === max) {
    const d = Math.abs(min) * 0.1 || 1;
    if (min === 0) max = 1; else { min -= d; max += d; }
  }
  let scale = 1;
  if (unit === 'bytes') {
    while (scale < 1024 ** (UNITS.length - 1) && (max - min) / (scale * 1024) >= 1) scale *= 1024;
  }
  let step = niceStep((max - min) / scale / count);
  if (unit === 'bytes' && scale === 1) step = Math.max(1, step);
  const start = Math.floor(min / scale / step + 1e-9);
  const end = Math.ceil(max / scale / step - 1e-9);
  const ticks = [];
  for (let i = start; i <= end; i++) ticks.push(Number((i * step).toPrecision(12)) * scale);
  return ticks;
}

/** Seconds-ago values for x-axis labels, oldest first, ending with 0 ("now"). */
export function timeTicks(windowSeconds, maxLabels = 6) {
  const W = Math.max(1, Number(windowSeconds) || 300);
  maxLabels = Math.max(1, Math.floor(maxLabels));
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
  let step = steps.find((s) => W / s <= maxLabels);
  if (!step) step = Math.ceil(W / maxLabels / 86400) * 86400;
  const out = [];
  for (let s = Math.floor(W / step) * step; s >= 0; s -= step) out.push(s);
  return out;
}

/** Points with a finite t inside [newest - windowSeconds, newest], order kept. */
export function windowPoints(points, windowSeconds) {
  const list = Array.isArray(points) ? points : [];
  let t1 = -Infinity;
  for (const p of list) if (p && Number.isFinite(p.t) && p.t > t1) t1 = p.t;
  if (t1 === -Infinity) return { t0: 0, t1: 0, points: [] };
  const t0 = t1 - Math.max(1, Number(windowSeconds) || 300) * 1000;
  return { t0, t1, points: list.filter((p) => p && Number.isFinite(p.t) && p.t >= t0 && p.t <= t1) };
}

function clean(v) {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null;
}

function normalizeOpts(o) {
  o = o || {};
  const series = (Array.isArray(o.series) ? o.series : [])
    .filter((s) => s && s.key != null)
    .map((s, i) => ({
      key: String(s.key),
      label: s.label != null ? String(s.label) : String(s.key),
      color: s.color ? String(s.color) : PALETTE[i % PALETTE.length],
      fill: !!s.fill,
      dashed: !!s.dashed,
    }));
  const ws = Number(o.windowSeconds);
  const h = Number(o.height);
  return {
    title: o.title == null ? '' : String(o.title),
    unit: ['bytes', 'number', 'rate'].includes(o.unit) ? o.unit : 'number',
    windowSeconds: Number.isFinite(ws) && ws > 0 ? ws : 300,
    series,
    stacked: !!o.stacked,
    height: Number.isFinite(h) && h > 0 ? h : 180,
  };
}

const r1 = (v) => Math.round(v * 10) / 10;

// Split a series into runs of non-null indices; above maxPts, keep per pixel column the min and max.
function segmentsOf(top, xs, maxPts) {
  const segs = [];
  let cur = null;
  for (let j = 0; j < top.length; j++) {
    if (top[j] == null) { cur = null; continue; }
    if (!cur) segs.push((cur = []));
    cur.push(j);
  }
  return top.length <= maxPts ? segs : segs.map((seg) => decimate(seg, top, xs));
}

function decimate(seg, top, xs) {
  const out = [];
  let col = NaN, lo = -1, hi = -1;
  const flush = () => {
    if (lo < 0) return;
    if (lo === hi) out.push(lo); else out.push(Math.min(lo, hi), Math.max(lo, hi));
  };
  for (const j of seg) {
    const c = Math.floor(xs[j]);
    if (c !== col) { flush(); col = c; lo = hi = j; continue; }
    if (top[j] < top[lo]) lo = j;
    if (top[j] > top[hi]) hi = j;
  }
  flush();
  if (out[0] !== seg[0]) out.unshift(seg[0]);
  if (out[out.length - 1] !== seg[seg.length - 1]) out.push(seg[seg.length - 1]);
  return out;
}

/** Pure: the whole chart as an SVG markup string. */
export function renderChartSvg(width, height, opts, points, events = [], lines = []) {
  const o = normalizeOpts(opts);
  const W = Math.max(120, Math.round(Number(width) || 600));
  const H = Math.max(80, Math.round(Number(height) || o.height));
  const unit = o.unit;
  const esc = escapeXml;
  const { t0, t1, points: P } = windowPoints(points, o.windowSeconds);
  const n = P.length;

  // Per-series values, stacked tops/bases and newest values.
  const vals = o.series.map((s) => P.map((p) => clean(p.values ? p.values[s.key] : undefined)));
  const tops = [], bases = [];
  let cum = new Array(n).fill(0);
  for (const v of vals) {
    if (o.stacked) {
      const base = cum;
      tops.push(v.map((x, j) => (x == null ? null : base[j] + x)));
      bases.push(base);
      cum = base.map((c, j) => c + (v[j] ?? 0));
    } else {
      tops.push(v);
      bases.push(null);
    }
  }
  const last = vals.map((v) => { for (let j = v.length - 1; j >= 0; j--) if (v[j] != null) return v[j]; return null; });

  const out = [];
  const aria = o.title ? ` aria-label="${esc(o.title)}"` : '';
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" class="line-chart" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}"`
    + ` role="img"${aria} data-points="${n}" font-size="11" font-family="${FONT}"`
    + ' style="display:block;max-width:100%;height:auto">');

  // Header: title, then legend items, wrapping onto extra rows when the width runs out.
  const head = [];
  let x = 4, row = 0;
  if (o.title) {
    head.push(`<text x="4" y="13" font-weight="600">${esc(o.title)}</text>`);
    x = 4 + o.title.length * CHAR_W * 1.08 + 14;
  }
  o.series.forEach((s, i) => {
    const text = `${s.label} ${formatValue(last[i], unit)}`;
    const w = 14 + text.length * CHAR_W + 12;
    if (x + w > W && x > 4) { row++; x = 4; }
    const y = 13 + row * 15;
    const dash = s.dashed ? ' stroke-dasharray="3 2"' : '';
    head.push(`<g class="chart-legend" data-legend="${esc(s.key)}"><line x1="${r1(x)}" x2="${r1(x + 10)}" y1="${y - 4}" y2="${y - 4}"`
      + ` stroke="${esc(s.color)}" stroke-width="${s.dashed ? 2 : 3}"${dash}/>`
      + `<text x="${r1(x + 14)}" y="${y}">${esc(text)}</text></g>`);
    x += w;
  });

  const top = 13 + row * 15 + 11;
  const bottom = H - 18;
  const right = W - 8;

  if (n === 0) {
    out.push(`<rect class="chart-plot" x="4" y="${top}" width="${W - 12}" height="${Math.max(0, bottom - top)}"`
      + ' fill="currentColor" fill-opacity="0.03"/>');
    out.push(`<g fill="currentColor">${head.join('')}<text x="${r1(W / 2)}" y="${r1((top + bottom) / 2 + 4)}"`
      + ' text-anchor="middle" fill-opacity="0.6">waiting for data</text></g></svg>');
    return out.join('');
  }

  // Y range: 0 .. max(data, reference lines) * 1.1.
  const refs = (Array.isArray(lines) ? lines : []).filter((l) => l && clean(l.value) != null);
  let maxV = 0;
  for (const t of tops) for (const v of t) if (v != null && v > maxV) maxV = v;
  for (const l of refs) if (l.value > maxV) maxV = l.value;
  const yTop = maxV > 0 ? maxV * 1.1 : unit === 'bytes' ? 1024 : 1;
  const ticks = niceTicks(0, yTop, 4, unit).filter((t) => t >= 0 && t <= yTop * (1 + 1e-9));
  const tickLabels = ticks.map((t) => formatTick(t, unit));
  const left = Math.max(28, Math.ceil(Math.max(...tickLabels.map((l) => l.length)) * CHAR_W) + 10);
  const plotW = Math.max(1, right - left), plotH = Math.max(1, bottom - top);
  const span = t1 - t0;
  const xOf = (t) => left + ((t - t0) / span) * plotW;
  const yOf = (v) => bottom - (v / yTop) * plotH;

  out.push(`<rect class="chart-plot" x="${left}" y="${top}" width="${plotW}" height="${plotH}" fill="currentColor" fill-opacity="0.03"/>`);

  // Grid + y labels.
  const axis = [];
  ticks.forEach((t, i) => {
    const y = r1(yOf(t));
    out.push(`<line x1="${left}" x2="${right}" y1="${y}" y2="${y}" stroke="currentColor" stroke-opacity="${t === 0 ? 0.35 : 0.12}"/>`);
    axis.push(`<text x="${left - 6}" y="${r1(y + 3.5)}" text-anchor="end">${esc(tickLabels[i])}</text>`);
  });
  // X labels (relative time).
  const ws = o.windowSeconds;
  for (const s of timeTicks(ws, Math.max(2, Math.min(6, Math.floor(plotW / 48))))) {
    const xx = r1(right - (s / ws) * plotW);
    out.push(`<line x1="${xx}" x2="${xx}" y1="${bottom}" y2="${bottom + 3}" stroke="currentColor" stroke-opacity="0.35"/>`);
    axis.push(`<text x="${xx}" y="${H - 4}" text-anchor="${s === 0 ? 'end' : 'middle'}">${formatRelTime(s)}</text>`);
  }
  out.push(`<g fill="currentColor" fill-opacity="0.7">${axis.join('')}</g>`);

  // Series: areas first, then lines and isolated dots.
  const xs = P.map((p) => xOf(p.t));
  const maxPts = 2 * plotW;
  const segsBy = tops.map((t) => segmentsOf(t, xs, maxPts));
  const pt = (j, v) => `${r1(xs[j])},${r1(yOf(v))}`;
  o.series.forEach((s, i) => {
    if (!o.stacked && !s.fill) return;
    const base = bases[i];
    const d = segsBy[i].filter((seg) => seg.length > 1).map((seg) =>
      'M' + seg.map((j) => pt(j, tops[i][j])).join('L')
      + 'L' + seg.slice().reverse().map((j) => pt(j, base ? base[j] : 0)).join('L') + 'Z').join('');
    if (d) out.push(`<path class="chart-area" data-area="${esc(s.key)}" d="${d}" fill="${esc(s.color)}" fill-opacity="${o.stacked ? 0.35 : 0.18}" stroke="none"/>`);
  });
  o.series.forEach((s, i) => {
    const segs = segsBy[i];
    const d = segs.map((seg) => 'M' + seg.map((j) => pt(j, tops[i][j])).join('L')).join('');
    const dash = s.dashed ? ' stroke-dasharray="5 3"' : '';
    out.push(`<path class="chart-line" data-series="${esc(s.key)}" data-last="${last[i] == null ? '' : last[i]}" d="${d}"`
      + ` fill="none" stroke="${esc(s.color)}" stroke-width="1.5" stroke-linejoin="round" stroke-linecap="round"${dash}/>`);
    for (const seg of segs) {
      if (seg.length !== 1) continue;
      const j = seg[0];
      out.push(`<circle class="chart-dot" data-dot="${esc(s.key)}" cx="${r1(xs[j])}" cy="${r1(yOf(tops[i][j]))}" r="2.5" fill="${esc(s.color)}"/>`);
    }
  });

  // Reference lines (dashed, labelled at the right end).
  for (const l of refs) {
    const y = r1(yOf(l.value));
    const color = l.color ? esc(l.color) : 'currentColor';
    const fv = formatValue(l.value, unit);
    const text = l.label != null && l.label !== '' ? `${l.label} ${fv}` : fv;
    const ty = y - 15 < top ? y + 11 : y - 3;
    out.push(`<g class="chart-refline" data-value="${l.value}"><line x1="${left}" x2="${right}" y1="${y}" y2="${y}" stroke="${color}"`
      + ` stroke-width="1" stroke-dasharray="5 4" stroke-opacity="0.8"/><text x="${right - 2}" y="${r1(ty)}" text-anchor="end"`
      + ` fill="${color}">${esc(text)}</text></g>`);
  }

  // Event markers.
  for (const e of Array.isArray(events) ? events : []) {
    if (!e || !Number.isFinite(e.t) || e.t < t0 || e.t > t1) continue;
    const ex = r1(xOf(e.t));
    const kind = String(e.kind ?? '');
    const c = eventColor(kind);
    out.push(`<g class="chart-event" data-kind="${esc(kind)}"><title>${esc(e.label ?? kind)}</title>`
      + `<line x1="${ex}" x2="${ex}" y1="${top}" y2="${bottom}" stroke="${c}" stroke-width="1" stroke-opacity="0.85"/>`
      + `<line x1="${ex}" x2="${ex}" y1="${top}" y2="${bottom}" stroke="transparent" stroke-width="7"/>`
      + `<path d="M${r1(ex - 3.5)},${top}h7l-3.5,5z" fill="${c}"/></g>`);
  }

  out.push(`<g fill="currentColor">${head.join('')}</g></svg>`);
  return out.join('');
}

export class LineChart {
  constructor(container, opts) {
    this.container = container;
    this.opts = normalizeOpts(opts);
    this._data = { points: [], events: [], lines: [] };
    this._width = 0;
    this._ro = null;
    if (typeof ResizeObserver === 'function' && container) {
      this._ro = new ResizeObserver(() => {
        if (this.container && (this.container.clientWidth || 600) !== this._width) this._render();
      });
      this._ro.observe(container);
    }
    this._render();
  }

  update(points, events = [], lines = []) {
    if (!this.container) return;
    // Keep only what the window needs, so a resize can redraw without the caller's full history.
    this._data = {
      points: windowPoints(points, this.opts.windowSeconds).points,
      events: Array.isArray(events) ? events : [],
      lines: Array.isArray(lines) ? lines : [],
    };
    this._render();
  }

  _render() {
    if (!this.container) return;
    const w = this.container.clientWidth || 600;
    this._width = w;
    const { points, events, lines } = this._data;
    this.container.innerHTML = renderChartSvg(w, this.opts.height, this.opts, points, events, lines);
  }

  destroy() {
    if (this._ro) this._ro.disconnect();
    this._ro = null;
    if (this.container) this.container.innerHTML = '';
    this.container = null;
    this._data = null;
  }
}
