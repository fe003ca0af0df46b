#!/usr/bin/env python3
"""Draws the tables of bench/window_memory.sh as one SVG of grouped bars: KV committed and process RSS
(MiB) at each number of tokens held, one bar per server run.

Usage: bench/window_memory_chart.py OUT.svg LABEL=FILE.tsv [LABEL=FILE.tsv ...]
  e.g. bench/window_memory_chart.py docs/memory-window.svg "-np 1=np1.tsv" "-np 4=np4.tsv"
Each FILE is the script's output; each server in it becomes a series named "server LABEL"."""
import sys

COLORS = ["#2b7bba", "#9ecae1", "#d94801", "#fdae6b", "#31a354", "#a1d99b"]


def read_series(label, path):
    series = {}
    with open(path) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 5 or cols[0] == "server" or not cols[2].isdigit():
                continue
            name = f"{cols[0]} {label}".strip()
            held = int(cols[2])
            point = round(held / 1024) * 1024 if held > 0 else 0  # 4,095 and 4,096 share a group
            series.setdefault(name, {})[point] = (float(cols[3]), float(cols[4]))
    return series


def panel(x0, title, series, points, idx, width, height):
    top = max(v[idx] for s in series.values() for v in s.values()) * 1.15 or 1
    out = [f'<text x="{x0 + width / 2}" y="24" text-anchor="middle" font-size="15">{title}</text>']
    base, plot_h = 40 + height, height
    out.append(f'<line x1="{x0}" y1="{base}" x2="{x0 + width}" y2="{base}" stroke="#333"/>')
    group_w = width / len(points)
    bar_w = group_w * 0.8 / len(series)
    for gi, p in enumerate(points):
        gx = x0 + gi * group_w + group_w * 0.1
        label = "start" if p == 0 else f"{p // 1024}k held"
        out.append(f'<text x="{x0 + gi * group_w + group_w / 2}" y="{base + 16}" text-anchor="middle" '
                   f'font-size="11">{label}</text>')
        for si, (name, s) in enumerate(series.items()):
            if p not in s:
                continue
            v = s[p][idx]
            h = v / top * plot_h
            x = gx + si * bar_w
            out.append(f'<rect x="{x:.1f}" y="{base - h:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
                       f'fill="{COLORS[si % len(COLORS)]}"><title>{name}: {v:g} MiB</title></rect>')
            out.append(f'<text x="{x + bar_w / 2 - 1:.1f}" y="{base - h - 3:.1f}" text-anchor="middle" '
                       f'font-size="9">{v:.0f}</text>')
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    series = {}
    for arg in sys.argv[2:]:
        label, _, path = arg.rpartition("=")
        series.update(read_series(label, path))
    points = sorted({p for s in series.values() for p in s})
    width, height = 430, 260
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * width + 90}" height="{height + 110}" '
           'font-family="sans-serif">', '<rect width="100%" height="100%" fill="white"/>']
    svg += panel(30, "KV committed (MiB)", series, points, 1, width, height)
    svg += panel(width + 70, "process RSS (MiB)", series, points, 0, width, height)
    for si, name in enumerate(series):
        y, x = height + 80, 30 + si * 150
        svg.append(f'<rect x="{x}" y="{y}" width="12" height="12" fill="{COLORS[si % len(COLORS)]}"/>')
        svg.append(f'<text x="{x + 16}" y="{y + 10}" font-size="12">{name}</text>')
    svg.append("</svg>")
    with open(sys.argv[1], "w") as f:
        f.write("\n".join(svg) + "\n")


main()
