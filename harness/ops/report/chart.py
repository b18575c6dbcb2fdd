"""Cost and runs over time as an inline SVG: bars of cost per period, a line of runs per period.

Pure: summaries in, SVG text out. Every value that reaches the SVG is a number or a date the
function formats itself, so nothing from a record is rendered as markup.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from harness.state.run_summary import RunSummary, parse_time

WIDTH, HEIGHT, PAD = 900, 220, 40
MAX_BUCKETS = 90
DAY = 86400


def buckets(rows: Iterable[RunSummary]) -> tuple[float, int, list[list[float]]]:
    """(start, seconds per bucket, [[cost, runs], ...]) over the runs' start times."""
    points = [(t, r.cost_usd) for r in rows if (t := parse_time(r.started_at)) is not None]
    if not points:
        return 0.0, DAY, []
    first, last = min(t for t, _ in points), max(t for t, _ in points)
    step = 3600 if last - first <= 3 * DAY else DAY
    start = first - first % step
    while (last - start) // step + 1 > MAX_BUCKETS:
        step *= 2
    out = [[0.0, 0.0] for _ in range(int((last - start) // step) + 1)]
    for t, cost in points:
        bucket = out[int((t - start) // step)]
        bucket[0] += cost
        bucket[1] += 1
    return start, step, out


def period(step: int) -> str:
    """`hour`, `6 hours`, `day`, `4 days`."""
    unit, size = ("day", DAY) if step % DAY == 0 else ("hour", 3600)
    n = step // size
    return unit if n == 1 else f"{n} {unit}s"


def label(t: float, step: int) -> str:
    return time.strftime("%m-%d %H:00" if step < DAY else "%Y-%m-%d", time.gmtime(t))


def svg_chart(rows: Iterable[RunSummary]) -> str:
    """The chart; a short note when there are no runs."""
    start, step, data = buckets(rows)
    if not data:
        return '<p class="muted">no runs yet</p>'
    top_cost = max(c for c, _ in data) or 1.0
    top_runs = max(n for _, n in data) or 1.0
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    width = inner_w / len(data)
    parts = [f'<svg id="chart" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
             f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
             f'aria-label="cost and runs per period">',
             f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" '
             'stroke="#999"/>']
    line = []
    for i, (cost, runs) in enumerate(data):
        x, h = PAD + i * width, inner_h * cost / top_cost
        parts.append(f'<rect x="{x + 1:.1f}" y="{HEIGHT - PAD - h:.1f}" '
                     f'width="{max(width - 2, 1):.1f}" height="{h:.1f}" fill="#9ec5fe">'
                     f'<title>{label(start + i * step, step)}: ${cost:.2f}, {int(runs)} runs'
                     '</title></rect>')
        line.append(f"{x + width / 2:.1f},{HEIGHT - PAD - inner_h * runs / top_runs:.1f}")
    parts.append(f'<polyline points="{" ".join(line)}" fill="none" stroke="#b3261e" '
                 'stroke-width="1.5"/>')
    parts += [f'<text x="{PAD}" y="{PAD - 8}">bars: cost per '
              f'{period(step)}, max ${top_cost:.2f}; '
              f'line: runs, max {int(top_runs)}</text>',
              f'<text x="{PAD}" y="{HEIGHT - PAD + 14}">{label(start, step)}</text>',
              f'<text x="{WIDTH - PAD}" y="{HEIGHT - PAD + 14}" text-anchor="end">'
              f'{label(start + (len(data) - 1) * step, step)}</text>', "</svg>"]
    return "\n".join(parts)
