#!/usr/bin/env python3
"""Draws the figures of bench/shared_prefix.py as one SVG of two line charts against the number of
conversations that share one system prompt: KV committed (MiB) for lazyslot with and without shared prefix
pages, and resident memory (Pss, MiB) for every server, with lazyslot's VmRSS as a dotted line.

Usage: bench/shared_prefix_chart.py OUT.svg RUN.json
  e.g. bench/shared_prefix_chart.py docs/memory-shared-prefix.svg /tmp/shared_prefix.json
RUN.json is what bench/shared_prefix.py --out-json writes: one entry per server (lazyslot, lazyslot-noshare,
llama-server), each with rows of rss and pss (KiB, from /proc) and, for lazyslot, kv (bytes). A server
missing from the file is left out. TITLE names the setup of the published run; change it for another.
Python 3 standard library only."""
import json
import sys
from xml.sax.saxutils import escape

COLORS = ["#2b7bba", "#9ecae1", "#d94801", "#fdae6b", "#31a354", "#a1d99b"]
TITLE = "16 conversations, one 2,000-token system prompt (Qwen3-0.6B shape, -np 16)"
# server in RUN.json -> (legend name, colour)
SERVERS = {"lazyslot": ("lazyslot", COLORS[0]),
           "lazyslot-noshare": ("lazyslot --no-kv-share", COLORS[1]),
           "llama-server": ("llama-server", COLORS[2])}
RSS_NAME = "lazyslot VmRSS (counts a shared page per mapping)"
WIDTH, HEIGHT = 900, 380
PLOT_TOP, PLOT_H, PLOT_W = 62, 228, 350
PANEL_X = (80, 510)  # left edge of each plot area


def nice_step(top, ticks=5):
    raw = top / ticks
    mag = 10 ** (len(str(int(raw))) - 1) if raw >= 1 else 1
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def load(path):
    """series: list of (name, colour, style, fmt, [(n, MiB)]) per panel."""
    with open(path) as f:
        runs = {r["server"]: r["rows"] for r in json.load(f)}
    kv, mem = [], []
    for server, (name, color) in SERVERS.items():
        rows = runs.get(server)
        if not rows:
            continue
        pts = [(r["n"], r["kv"] / 2**20) for r in rows if r.get("kv") is not None]
        if pts:
            kv.append((name, color, "solid", "{:,.1f}", pts))
        pts = [(r["n"], r["pss"] / 1024) for r in rows if r.get("pss")]
        if pts:
            mem.append((name, color, "solid", "{:,.0f}", pts))
    rows = runs.get("lazyslot")
    if rows:
        pts = [(r["n"], r["rss"] / 1024) for r in rows if r.get("rss")]
        if pts:
            mem.append((RSS_NAME, COLORS[0], "dotted", "{:,.0f}", pts))
    n_max = max([r["n"] for rows in runs.values() for r in rows] + [1])
    return kv, mem, n_max


def stroke(style):
    if style == "dotted":
        return 'stroke-width="1.6" stroke-dasharray="2,3"'
    return 'stroke-width="2.5"'


def panel(x0, title, series, n_max):
    out = [f'<text x="{x0 + PLOT_W / 2}" y="{PLOT_TOP - 14}" text-anchor="middle" font-size="14" '
           f'font-weight="bold">{escape(title)}</text>']
    base = PLOT_TOP + PLOT_H
    top_v = max([v for s in series for _, v in s[4]] + [1]) * 1.08
    step = nice_step(top_v)
    top_v = step * -(-top_v // step)
    xs = lambda n: x0 + n / n_max * PLOT_W
    ys = lambda v: base - v / top_v * PLOT_H
    # y grid and tick labels
    v = 0
    while v <= top_v + 1e-9:
        y = ys(v)
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + PLOT_W}" y2="{y:.1f}" stroke="#e4e4e4"/>')
        out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{v:,.0f}</text>')
        v += step
    # x ticks
    xstep = max(1, -(-n_max // 8))
    for n in range(0, n_max + 1, xstep):
        x = xs(n)
        out.append(f'<line x1="{x:.1f}" y1="{base}" x2="{x:.1f}" y2="{base + 4}" stroke="#333"/>')
        out.append(f'<text x="{x:.1f}" y="{base + 17}" text-anchor="middle" font-size="11">{n}</text>')
    out.append(f'<line x1="{x0}" y1="{base}" x2="{x0 + PLOT_W}" y2="{base}" stroke="#333"/>')
    out.append(f'<line x1="{x0}" y1="{PLOT_TOP}" x2="{x0}" y2="{base}" stroke="#333"/>')
    out.append(f'<text x="{x0 + PLOT_W / 2}" y="{base + 34}" text-anchor="middle" font-size="12">'
               'conversations</text>')
    ty = PLOT_TOP + PLOT_H / 2
    out.append(f'<text x="{x0 - 52}" y="{ty}" text-anchor="middle" font-size="12" '
               f'transform="rotate(-90 {x0 - 52} {ty})">MiB</text>')
    if not series:
        out.append(f'<text x="{x0 + PLOT_W / 2}" y="{ty}" text-anchor="middle" font-size="12" '
                   'fill="#888">no data</text>')
        return out
    ends = []
    for name, color, style, fmt, pts in series:
        path = " ".join(f"{xs(n):.1f},{ys(v):.1f}" for n, v in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" {stroke(style)}>'
                   f'<title>{escape(name)}</title></polyline>')
        if style == "solid":
            for n, v in pts:
                out.append(f'<circle cx="{xs(n):.1f}" cy="{ys(v):.1f}" r="2.5" fill="{color}">'
                           f'<title>{escape(name)}, {n}: {fmt.format(v)} MiB</title></circle>')
        n, v = pts[-1]
        text = fmt.format(v) if style == "solid" else f"VmRSS {fmt.format(v)}"
        ends.append((ys(v), xs(n), text, color, style))
    # value at the last point, above it; below it when that would run into a label already placed
    placed = []
    for y, x, text, color, style in sorted(ends, key=lambda e: (e[4] != "solid", e[0])):
        ly = y - 7
        if any(abs(ly - p) < 13 for p in placed):
            ly = y + 32  # clear of a rising line under the text
        placed.append(ly)
        fill = "#333" if style == "dotted" else color if color != COLORS[1] else "#4a90c0"
        out.append(f'<text x="{x - 4:.1f}" y="{ly:.1f}" text-anchor="end" font-size="11" '
                   f'fill="{fill}">{text}</text>')
    return out


def legend(entries, y):
    out, x = [], PANEL_X[0]
    for name, color, style in entries:
        out.append(f'<line x1="{x}" y1="{y - 4}" x2="{x + 24}" y2="{y - 4}" stroke="{color}" {stroke(style)}/>')
        out.append(f'<text x="{x + 30}" y="{y}" font-size="12">{escape(name)}</text>')
        x += 30 + 6.6 * len(name) + 26
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    kv, mem, n_max = load(sys.argv[2])
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{WIDTH / 2}" y="20" text-anchor="middle" font-size="15">{escape(TITLE)}</text>']
    svg += panel(PANEL_X[0], "KV committed (MiB)", kv, n_max)
    svg += panel(PANEL_X[1], "Resident memory (MiB, Pss)", mem, n_max)
    seen, entries = set(), []
    for name, color, style, _, _ in kv + mem:
        if name not in seen:
            seen.add(name)
            entries.append((name, color, style))
    svg += legend(entries, HEIGHT - 14)
    svg.append("</svg>")
    with open(sys.argv[1], "w") as f:
        f.write("\n".join(svg) + "\n")


main()
