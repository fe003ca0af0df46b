#!/usr/bin/env python3
"""Draws the figures of bench/park.py as one SVG of two panels: the process's memory (Pss, MiB) over time for
every server, with a mark where the conversations start returning, and the time to first token of a
returning turn (s) per server as a bar at the median with a min-max whisker and the median cache_n.

Usage: bench/park_chart.py OUT.svg RUN.json [--budget-mib N --weights-mib M]
  e.g. bench/park_chart.py docs/park.svg /tmp/park.json --budget-mib 1024 --weights-mib 400
RUN.json is what bench/park.py --out-json writes: one entry per server (lazyslot-park, lazyslot,
llama-server), each with memory samples (t in seconds since the server was started, pss in KiB, the phase
they fall in) and returns (wall_ms and cache_n per returning turn). A server missing from the file is left
out. The servers ran one after the other; each one's line starts at its own time 0. With --budget-mib and
--weights-mib (both MiB) a dashed line marks their sum (lazyslot's /metrics has weights_resident_bytes).
TITLE names the setup of the published run; change it for another.
Python 3 standard library only."""
import argparse
import json
import statistics
from xml.sax.saxutils import escape

COLORS = ["#2b7bba", "#9ecae1", "#d94801", "#fdae6b", "#31a354", "#a1d99b"]
TITLE = "Conversations returning after their KV was released (Qwen3-0.6B shape, -np 4, --kv-budget 1 GiB)"
# server in RUN.json -> (display name, colour)
SERVERS = {"lazyslot-park": ("lazyslot --kv-park", COLORS[0]),
           "lazyslot": ("lazyslot (recompute)", COLORS[1]),
           "llama-server": ("llama-server --cache-ram", COLORS[2])}
WIDTH, HEIGHT = 900, 380
PLOT_TOP, PLOT_H = 62, 228
MEM_X, MEM_W = 72, 340      # memory panel: left edge and width of the plot area
TTFT_X, TTFT_W = 600, 245   # time-to-first-token panel; server names sit left of TTFT_X
LABEL_W = 150               # room for the server names
HALO = 'stroke="white" stroke-width="3" paint-order="stroke"'  # keeps a label readable over a line


def nice_step(top, ticks=5):
    raw = top / ticks
    mag = 1.0
    while raw > 10 * mag:
        mag *= 10
    while raw <= mag and mag > 1e-6:
        mag /= 10
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def axis_top(v):
    step = nice_step(v)
    return step * -(-v // step), step


def tick_text(v, step):
    digits = next(d for d in range(4) if abs(round(step, d) - step) < 1e-9 or d == 3)
    return f"{v:,.{digits}f}"


def text_fill(color):
    return "#4a90c0" if color == COLORS[1] else color  # the light blue is hard to read as text


def thin(pts, buckets):
    """At most about 2 * buckets points: the lowest and highest of each time bucket, in time order, so a
    saw-tooth keeps its teeth."""
    if len(pts) <= 2 * buckets:
        return pts
    t0, t1 = pts[0][0], pts[-1][0]
    width = (t1 - t0) / buckets or 1
    groups = {}
    for p in pts:
        groups.setdefault(int((p[0] - t0) / width), []).append(p)
    out = []
    for _, group in sorted(groups.items()):
        out += sorted({min(group, key=lambda q: q[1]), max(group, key=lambda q: q[1])})
    return out


def load(path):
    """mem: (name, colour, [(t, MiB)], t where the returns start or None);
    ttft: (name, colour, median s, min s, max s, median cache_n, turns)."""
    with open(path) as f:
        runs = {r["server"]: r for r in json.load(f)}
    mem, ttft = [], []
    for server, (name, color) in SERVERS.items():
        run = runs.get(server)
        if not run:
            continue
        samples = [s for s in run.get("memory") or [] if s.get("pss")]  # 0: /proc was not readable
        if samples:
            ret = next((s["t"] for s in samples if s["phase"] == "returns"), None)
            mem.append((name, color, [(s["t"], s["pss"] / 1024) for s in samples], ret))
        returns = run.get("returns") or []
        if returns:
            walls = [r["wall_ms"] / 1000 for r in returns]
            ttft.append((name, color, statistics.median(walls), min(walls), max(walls),
                         statistics.median(r["cache_n"] for r in returns), len(returns)))
    return mem, ttft


def title(x, text):
    return (f'<text x="{x:.1f}" y="{PLOT_TOP - 14}" text-anchor="middle" font-size="14" '
            f'font-weight="bold">{escape(text)}</text>')


def no_data(x, y):
    return f'<text x="{x:.1f}" y="{y}" text-anchor="middle" font-size="12" fill="#888">no data</text>'


def memory_panel(series, limit):
    x0, base = MEM_X, PLOT_TOP + PLOT_H
    out = [title(x0 + MEM_W / 2, "Process memory over time (MiB, Pss)")]
    top_v, step = axis_top(max([v for s in series for _, v in s[2]] + [limit or 0, 1]) * 1.08)
    t_top, t_step = axis_top(max([t for s in series for t, _ in s[2]] + [1]))
    xs = lambda t: x0 + t / t_top * MEM_W
    ys = lambda v: base - v / top_v * PLOT_H
    v = 0
    while v <= top_v + 1e-9:
        y = ys(v)
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + MEM_W}" y2="{y:.1f}" stroke="#e4e4e4"/>')
        out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{v:,.0f}</text>')
        v += step
    t = 0
    while t <= t_top + 1e-9:
        x = xs(t)
        out.append(f'<line x1="{x:.1f}" y1="{base}" x2="{x:.1f}" y2="{base + 4}" stroke="#333"/>')
        out.append(f'<text x="{x:.1f}" y="{base + 17}" text-anchor="middle" font-size="11">'
                   f'{tick_text(t, t_step)}</text>')
        t += t_step
    out.append(f'<line x1="{x0}" y1="{base}" x2="{x0 + MEM_W}" y2="{base}" stroke="#333"/>')
    out.append(f'<line x1="{x0}" y1="{PLOT_TOP}" x2="{x0}" y2="{base}" stroke="#333"/>')
    out.append(f'<text x="{x0 + MEM_W / 2}" y="{base + 34}" text-anchor="middle" font-size="12">'
               'seconds since the server was started</text>')
    ty = PLOT_TOP + PLOT_H / 2
    out.append(f'<text x="{x0 - 48}" y="{ty}" text-anchor="middle" font-size="12" '
               f'transform="rotate(-90 {x0 - 48} {ty})">MiB</text>')
    if limit:
        y = ys(limit)
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + MEM_W}" y2="{y:.1f}" stroke="#555" '
                   'stroke-width="1.2" stroke-dasharray="6,4"/>')
        out.append(f'<text x="{x0 + 6}" y="{y - 5:.1f}" font-size="11" fill="#555" {HALO}>'
                   f'--kv-budget + weights ({limit:,.0f})</text>')
    if not series:
        out.append(no_data(x0 + MEM_W / 2, ty))
        return out
    marks = []
    for name, color, pts, ret in reversed(series):  # lazyslot --kv-park last, on top
        path = " ".join(f"{xs(t):.1f},{ys(v):.1f}" for t, v in thin(pts, MEM_W))
        peak = max(v for _, v in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2" '
                   f'stroke-linejoin="round"><title>{escape(name)}: peak Pss {peak:,.0f} MiB</title></polyline>')
        if ret is not None:
            v = next(v for t, v in pts if t >= ret)
            marks.append((xs(ret), ys(v), color, name, ret))
    for i, (x, y, color, name, ret) in enumerate(sorted(marks, key=lambda m: m[1])):
        out.append(f'<line x1="{x:.1f}" y1="{y - 9:.1f}" x2="{x:.1f}" y2="{y + 9:.1f}" stroke="#333" '
                   f'stroke-width="1.5"><title>{escape(name)}: returns start at {ret:,.0f} s</title></line>')
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}" stroke="#333"/>')
        if i == 0:  # once, over the highest mark; over the dashed line when it would cross the word
            ly = y - 12
            if limit and ly - 12 < ys(limit) < ly + 3:
                ly = ys(limit) - 4
            out.append(f'<text x="{x:.1f}" y="{ly:.1f}" text-anchor="middle" font-size="11" fill="#333" '
                       f'{HALO}>returns</text>')
    return out


def ttft_panel(rows):
    x0, base = TTFT_X, PLOT_TOP + PLOT_H
    out = [title((x0 - LABEL_W + x0 + TTFT_W) / 2, "Time to first token of a returning turn (s)")]
    top_v, step = axis_top(max([r[4] for r in rows] + [0.95]) * 1.05)
    xs = lambda v: x0 + v / top_v * TTFT_W
    v = 0
    while v <= top_v + 1e-9:
        x = xs(v)
        out.append(f'<line x1="{x:.1f}" y1="{PLOT_TOP}" x2="{x:.1f}" y2="{base}" stroke="#e4e4e4"/>')
        out.append(f'<line x1="{x:.1f}" y1="{base}" x2="{x:.1f}" y2="{base + 4}" stroke="#333"/>')
        out.append(f'<text x="{x:.1f}" y="{base + 17}" text-anchor="middle" font-size="11">'
                   f'{tick_text(v, step)}</text>')
        v += step
    out.append(f'<line x1="{x0}" y1="{base}" x2="{x0 + TTFT_W}" y2="{base}" stroke="#333"/>')
    out.append(f'<line x1="{x0}" y1="{PLOT_TOP}" x2="{x0}" y2="{base}" stroke="#333"/>')
    out.append(f'<text x="{x0 + TTFT_W / 2}" y="{base + 34}" text-anchor="middle" font-size="12">'
               'seconds: median, whisker min to max</text>')
    if not rows:
        out.append(no_data(x0 + TTFT_W / 2, PLOT_TOP + PLOT_H / 2))
        return out
    row_h = min(PLOT_H / len(rows), 70)
    y_first = PLOT_TOP + (PLOT_H - row_h * len(rows)) / 2
    for i, (name, color, med, lo, hi, cache_n, turns) in enumerate(rows):
        yc = y_first + row_h * (i + 0.5)
        out.append(f'<text x="{x0 - 8}" y="{yc - 2:.1f}" text-anchor="end" font-size="12">{escape(name)}</text>')
        out.append(f'<text x="{x0 - 8}" y="{yc + 12:.1f}" text-anchor="end" font-size="11" fill="#666">'
                   f'cache_n {cache_n:,.0f}</text>')
        out.append(f'<rect x="{x0}" y="{yc - 11:.1f}" width="{max(xs(med) - x0, 1):.1f}" height="22" '
                   f'fill="{color}"><title>{escape(name)}: median {med:,.2f} s, min {lo:,.2f} s, '
                   f'max {hi:,.2f} s over {turns} returning turns</title></rect>')
        xl, xh = xs(lo), xs(hi)
        out.append(f'<line x1="{xl:.1f}" y1="{yc:.1f}" x2="{xh:.1f}" y2="{yc:.1f}" stroke="#333" '
                   'stroke-width="1.2"/>')
        for x in (xl, xh):
            out.append(f'<line x1="{x:.1f}" y1="{yc - 5:.1f}" x2="{x:.1f}" y2="{yc + 5:.1f}" stroke="#333" '
                       'stroke-width="1.2"/>')
        out.append(f'<text x="{max(xs(med), xh) + 5:.1f}" y="{yc + 4:.1f}" font-size="12" '
                   f'font-weight="bold" fill="{text_fill(color)}">{med:,.1f}</text>')
    return out


def legend(entries, y):
    out, x = [], MEM_X
    for name, color, dash in entries:
        extra = ' stroke-dasharray="6,4" stroke-width="1.2"' if dash else ' stroke-width="2.5"'
        out.append(f'<line x1="{x}" y1="{y - 4}" x2="{x + 24}" y2="{y - 4}" stroke="{color}"{extra}/>')
        out.append(f'<text x="{x + 30}" y="{y}" font-size="12">{escape(name)}</text>')
        x += 30 + 6.6 * len(name) + 22
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", metavar="OUT.svg")
    ap.add_argument("run", metavar="RUN.json")
    ap.add_argument("--budget-mib", type=float, help="lazyslot's --kv-budget, MiB")
    ap.add_argument("--weights-mib", type=float, help="the model's weights, MiB")
    args = ap.parse_args()
    if (args.budget_mib is None) != (args.weights_mib is None):
        ap.error("give --budget-mib and --weights-mib together")
    limit = args.budget_mib + args.weights_mib if args.budget_mib is not None else None
    mem, ttft = load(args.run)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{WIDTH / 2}" y="20" text-anchor="middle" font-size="15">{escape(TITLE)}</text>']
    svg += memory_panel(mem, limit)
    svg += ttft_panel(ttft)
    names = {s[0] for s in mem} | {r[0] for r in ttft}
    entries = [(name, color, False) for name, color in SERVERS.values() if name in names]
    if limit:
        entries.append(("--kv-budget + weights", "#555", True))
    svg += legend(entries, HEIGHT - 14)
    svg.append("</svg>")
    with open(args.out, "w") as f:
        f.write("\n".join(svg) + "\n")


main()
