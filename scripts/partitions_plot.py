#!/usr/bin/env python3
"""Cost vs partition count: runs scripts/partitions.sh at 1k, 5k, 10k and 20k partitions per
node (or the counts given, in thousands) and writes a CSV and an SVG of create time, idle RSS
per partition, SIGTERM, clean restart and unclean restart against the partition count.

Usage: scripts/partitions_plot.py [OUT_DIR] [THOUSANDS ...]
  (default target/partitions-plot, counts 1 5 10 20; SHARDLOG_BIN and WRITE_S pass through)
"""
import csv
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (column, unit, pattern in partitions.sh's output)
FIGURES = [
    ("create_s", "s", r"create: (\d+) ms", 1 / 1000),
    ("idle_rss_kb_per_partition", "KB", r"(\d+) bytes per partition above", 1 / 1000),
    ("sigterm_ms", "ms", r"SIGTERM after create: (\d+) ms", 1),
    ("clean_restart_ms", "ms", r"restart: serving after (\d+) ms", 1),
    ("unclean_restart_ms", "ms", r"kill -9 during writes .*: serving after (\d+) ms", 1),
]


def measure(thousands):
    out = subprocess.run(
        [os.path.join(ROOT, "scripts/partitions.sh"), str(thousands)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    row = {"partitions": thousands * 1000}
    for name, _, pattern, scale in FIGURES:
        found = re.search(pattern, out)
        if not found:
            sys.exit(f"partitions.sh {thousands}: no '{name}' in its output:\n{out}")
        row[name] = round(int(found.group(1)) * scale, 2)
    print(out.strip(), flush=True)
    return row


def panel(x0, rows, name, unit):
    """One 260x180 chart of `name` against the partition count, at x offset x0."""
    w, h, pad = 260, 180, 40
    xs = [r["partitions"] for r in rows]
    ys = [r[name] for r in rows]
    top = max(ys) * 1.15 or 1

    def at(x, y):
        return (x0 + pad + (w - 2 * pad) * x / max(xs), h - pad + (pad * 2 - h) * y / top)

    points = " ".join("%.1f,%.1f" % at(x, y) for x, y in zip(xs, ys))
    parts = [
        f'<text x="{x0 + pad}" y="20" font-size="12">{name} ({unit})</text>',
        f'<line x1="{x0 + pad}" y1="{h - pad}" x2="{x0 + w - pad}" y2="{h - pad}" stroke="black"/>',
        f'<line x1="{x0 + pad}" y1="{pad}" x2="{x0 + pad}" y2="{h - pad}" stroke="black"/>',
        f'<polyline points="{points}" fill="none" stroke="steelblue" stroke-width="2"/>',
    ]
    for x, y in zip(xs, ys):
        px, py = at(x, y)
        parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="steelblue"/>')
        parts.append(f'<text x="{px - 10:.1f}" y="{py - 6:.1f}" font-size="9">{y:g}</text>')
        parts.append(f'<text x="{px - 8:.1f}" y="{h - pad + 14}" font-size="9">{x // 1000}k</text>')
    return "\n".join(parts)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target/partitions-plot")
    counts = [int(c) for c in sys.argv[2:]] or [1, 5, 10, 20]
    os.makedirs(out_dir, exist_ok=True)
    rows = [measure(c) for c in counts]
    with open(os.path.join(out_dir, "partitions.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["partitions"] + [n for n, *_ in FIGURES])
        writer.writeheader()
        writer.writerows(rows)
    panels = [panel(i * 260, rows, name, unit) for i, (name, unit, *_) in enumerate(FIGURES)]
    svg = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{260 * len(FIGURES)}" height="180" '
        f'font-family="sans-serif">\n' + "\n".join(panels) + "\n</svg>\n"
    )
    with open(os.path.join(out_dir, "partitions.svg"), "w") as f:
        f.write(svg)
    for row in rows:
        print(row)
    print(f"wrote {out_dir}/partitions.csv and partitions.svg")


if __name__ == "__main__":
    main()
