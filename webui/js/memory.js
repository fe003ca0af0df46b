// The memory view: live charts of what the process holds, fed by GET /memory/stream (Server-Sent Events;
// docs/webui.md). Process RSS and its anonymous, file and memory-file (KV) parts; the KV committed per slot of
// each loaded model with its budget; the weights resident; requests and tokens per second; and the events the
// server derives (first commit, trims, idle release, weights released and paged back, models loaded and
// unloaded) as markers on every chart and as a list.
import { events as sseEvents, ApiError } from './api.js';
import { LineChart, formatBytes } from './chart.js';

const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7',
                 '#9c755f', '#bab0ac'];
const KEEP = 1200;  // samples kept (10 minutes at the server's half-second interval)

export class MemoryView {
  // root: the view's element; onAuth(): called when the stream gets a 401 (the page asks for the key)
  constructor(root, { onAuth } = {}) {
    this.root = root;
    this.onAuth = onAuth || (() => {});
    this.samples = [];
    this.events = [];
    this.charts = new Map();  // id -> LineChart
    this.abort = null;
    this.status = root.querySelector('#memory-status');
    this.summary = root.querySelector('#memory-summary');
    this.chartsBox = root.querySelector('#memory-charts');
    this.eventList = root.querySelector('#event-log');
    this.drawPending = false;
    this.windowSeconds = 60;
    const pick = root.querySelector('#memory-window');
    if (pick) {
      this.windowSeconds = Number(pick.value) || 60;
      pick.addEventListener('change', () => {
        this.windowSeconds = Number(pick.value) || 60;
        this.draw();
      });
    }
  }

  // Subscribes (again after a failure, every 2 s) until stop().
  async start() {
    if (this.abort) return;
    this.abort = new AbortController();
    const signal = this.abort.signal;
    while (!signal.aborted) {
      try {
        this.setStatus('connecting');
        for await (const ev of sseEvents('/memory/stream', { signal })) {
          const data = JSON.parse(ev.data);
          if (ev.event === 'history') {
            this.samples = data.samples.slice(-KEEP);
            this.events = data.events;
            this.setStatus('live');
          } else if (ev.event === 'sample') {
            this.samples.push(data);
            if (this.samples.length > KEEP) this.samples.shift();
            this.events.push(...data.events);
            if (this.events.length > 500) this.events.splice(0, this.events.length - 500);
          } else if (ev.event === 'end') {
            this.setStatus(`ended: ${data.reason}`);
          }
          this.scheduleDraw();
        }
      } catch (e) {
        if (signal.aborted) break;
        if (e instanceof ApiError && e.status === 401) {
          this.setStatus('needs the API key');
          this.onAuth();
        } else {
          this.setStatus(`disconnected (${e.message}); retrying`);
        }
      }
      if (!signal.aborted) await new Promise((r) => setTimeout(r, 2000));
    }
  }

  stop() {
    if (this.abort) this.abort.abort();
    this.abort = null;
  }

  setStatus(text) {
    if (this.status) this.status.textContent = text;
    this.root.dataset.stream = text;
  }

  scheduleDraw() {
    if (this.drawPending) return;
    this.drawPending = true;
    requestAnimationFrame(() => {
      this.drawPending = false;
      this.draw();
    });
  }

  chart(id, opts) {
    let c = this.charts.get(id);
    if (!c) {
      const box = document.createElement('div');
      box.className = 'chart-box';
      box.id = id;
      this.chartsBox.appendChild(box);
      c = new LineChart(box, { windowSeconds: this.windowSeconds, height: 190, ...opts });
      this.charts.set(id, c);
    }
    // Until the history fills the chosen window, the charts span what there is (at least 20 s), so that a
    // fresh page shows its first seconds across the whole width.
    const span = this.samples.length ? (this.samples[this.samples.length - 1].t - this.samples[0].t) / 1000 : 0;
    c.opts.windowSeconds = Math.min(this.windowSeconds, Math.max(20, Math.ceil(span)));
    return c;
  }

  draw() {
    const samples = this.samples;
    if (!samples.length) return;
    const last = samples[samples.length - 1];
    const marks = this.events.map((e) => ({ t: e.t, kind: e.kind, label: `${e.model}: ${e.label}` }));

    // The process as a whole.
    const budget = last.memory_budget ? [{ value: last.memory_budget.limit, label: '--memory-budget' }] : [];
    this.chart('chart-process', {
      title: 'Process resident memory', unit: 'bytes',
      series: [
        { key: 'rss', label: 'RSS', color: PALETTE[0] },
        { key: 'anon', label: 'anonymous', color: PALETTE[1] },
        { key: 'file', label: 'file (weights)', color: PALETTE[2] },
        { key: 'shmem', label: 'memory file (KV)', color: PALETTE[3] },
      ],
    }).update(samples.map((s) => ({ t: s.t, values: { rss: s.process.rss, anon: s.process.rss_anon,
                                                       file: s.process.rss_file, shmem: s.process.rss_shmem } })),
              marks, budget);

    // Per model: KV per slot (stacked) against its budget, weights resident, and rates.
    const ids = [...new Set(samples.flatMap((s) => s.models.map((m) => m.id)))];
    const weightSeries = ids.map((id, i) => ({ key: id, label: id, color: PALETTE[i % PALETTE.length] }));
    this.chart('chart-weights', { title: 'Weights resident', unit: 'bytes', series: weightSeries })
      .update(samples.map((s) => ({ t: s.t, values: Object.fromEntries(s.models.map((m) => [m.id, m.weights_resident ?? 0])) })),
              marks.filter(isWeightEvent));
    ids.forEach((id, k) => {
      const latest = last.models.find((m) => m.id === id);
      const nSlots = Math.max(0, ...samples.map((s) => (s.models.find((m) => m.id === id)?.slots || []).length));
      if (!nSlots) return;
      const series = Array.from({ length: nSlots }, (_, i) => ({ key: `slot${i}`, label: `slot ${i}`, fill: true,
                                                                 color: PALETTE[i % PALETTE.length] }));
      const lines = latest && latest.kv_budget ? [{ value: latest.kv_budget, label: '--kv-budget', color: '#c00' }] : [];
      this.chart(`chart-kv-${k}`, { title: `KV cache committed per slot: ${id}`, unit: 'bytes', stacked: true, series })
        .update(samples.map((s) => {
          const m = s.models.find((x) => x.id === id);
          const values = {};
          for (let i = 0; i < nSlots; ++i) values[`slot${i}`] = m && m.slots && m.slots[i] ? m.slots[i].committed : null;
          return { t: s.t, values };
        }), marks.filter((e) => e.label.startsWith(`${id}:`)), lines);
    });
    const rates = [];
    for (let i = 1; i < samples.length; ++i) {
      const dt = (samples[i].t - samples[i - 1].t) / 1000;
      if (dt <= 0) continue;
      const sum = (s, f) => s.models.reduce((a, m) => a + (m[f] || 0), 0);
      const rate = (f) => Math.max(0, (sum(samples[i], f) - sum(samples[i - 1], f)) / dt);
      rates.push({ t: samples[i].t, values: { requests: rate('requests_total'), prompt: rate('prompt_tokens_total'),
                                              generated: rate('generated_tokens_total') } });
    }
    this.chart('chart-rates', {
      title: 'Requests and tokens per second', unit: 'rate',
      series: [
        { key: 'requests', label: 'requests/s', color: PALETTE[4] },
        { key: 'prompt', label: 'prompt tokens/s', color: PALETTE[5] },
        { key: 'generated', label: 'generated tokens/s', color: PALETTE[6] },
      ],
    }).update(rates, marks);

    this.drawSummary(last);
    this.drawSlots(last);
    this.drawEvents();
  }

  drawSummary(s) {
    const kv = s.models.reduce((a, m) => a + (m.kv_committed || 0), 0);
    const reserved = s.models.reduce((a, m) => a + (m.kv_reserved || 0), 0);
    const weights = s.models.reduce((a, m) => a + (m.weights_resident || 0), 0);
    const items = [
      ['mem-rss', 'RSS', s.process.rss],
      ['mem-kv', 'KV committed', kv, `of ${formatBytes(reserved)} reserved`],
      ['mem-weights', 'weights resident', weights],
    ];
    if (s.memory_budget) items.push(['mem-budget', 'memory budget used', s.memory_budget.used, `of ${formatBytes(s.memory_budget.limit)}`]);
    this.summary.replaceChildren(...items.map(([id, label, bytes, note]) => {
      const el = document.createElement('div');
      el.className = 'mem-figure';
      el.id = id;
      el.dataset.bytes = String(bytes);
      const v = document.createElement('strong');
      v.textContent = formatBytes(bytes);
      const l = document.createElement('span');
      l.textContent = note ? `${label} ${note}` : label;
      el.append(v, l);
      return el;
    }));
  }

  // One row per slot of each loaded model: what it holds now, in tokens and in bytes.
  drawSlots(s) {
    const table = this.root.querySelector('#slot-table');
    if (!table) return;
    const rows = [];
    for (const m of s.models) {
      for (const slot of m.slots || []) {
        const tr = document.createElement('tr');
        tr.dataset.model = m.id;
        tr.dataset.slot = String(slot.id);
        tr.dataset.busy = slot.busy ? '1' : '0';
        const cells = [m.id, String(slot.id), slot.busy ? 'busy' : 'idle',
                       `${slot.n_tokens.toLocaleString()} / ${slot.n_ctx.toLocaleString()}`,
                       formatBytes(slot.committed), slot.shared ? formatBytes(slot.shared) : '-'];
        for (const text of cells) {
          const td = document.createElement('td');
          td.textContent = text;
          tr.append(td);
        }
        rows.push(tr);
      }
    }
    table.querySelector('tbody').replaceChildren(...rows);
  }

  drawEvents() {
    const recent = this.events.slice(-60).reverse();
    this.eventList.replaceChildren(...recent.map((e) => {
      const li = document.createElement('li');
      li.dataset.kind = e.kind;
      const time = document.createElement('time');
      time.textContent = new Date(e.t).toLocaleTimeString();
      li.append(time, ` ${e.model}: ${e.label}`);
      return li;
    }));
  }
}

function isWeightEvent(e) {
  return ['weights_released', 'weights_reloaded', 'model_loaded', 'model_unloaded', 'model_sleeping'].includes(e.kind);
}
