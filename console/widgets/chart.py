"""Charts of a queue's minutes (engine/series.py) in text: they fit a table-less 80-column
terminal, read without colour (bars are characters, every figure is also a number), and need no
font beyond the block elements the sparkline already uses.

``compact_chart``: three lines (completed, dead, wait p95) the width of the terminal, for the
Overview's selected queue. ``full_chart``: the chart screen's bars, each a few rows tall over a
time axis.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.text import Text

from console import palette
from engine.durations import duration
from engine.series import QueueSeries

EIGHTHS = "▁▂▃▄▅▆▇█"
LABEL = 6  # the width of a row's label ("done ", "dead ", "wait ")


def fold(values: Sequence[float | None], width: int, how: Callable[[list[float]], float] = sum) -> list[float | None]:
    """Fit a series into ``width`` columns by folding neighbours (``sum`` for counts, ``max`` for
    latencies); a column with no value stays None."""
    vals = list(values)
    if len(vals) <= width or width <= 0:
        return vals
    size = len(vals) / width
    out: list[float | None] = []
    for i in range(width):
        part = [v for v in vals[int(i * size) : int((i + 1) * size)] if v is not None]
        out.append(how(part) if part else None)
    return out


def spark_line(values: Sequence[float | None], top: float | None = None) -> str:
    """One row: an eighth block per value scaled to ``top`` (default: the largest); zero or no
    value is a space, any positive value at least the lowest block."""
    nums = [v for v in values if v is not None]
    top = top if top is not None else max(nums, default=0)
    out = []
    for v in values:
        if v is None or v <= 0 or top <= 0:
            out.append(" ")
        else:
            out.append(EIGHTHS[max(0, min(7, round(v / top * 8) - 1))])
    return "".join(out)


def bar_rows(values: Sequence[float | None], height: int, top: float | None = None) -> list[str]:
    """A bar chart ``height`` rows tall, one column per value, top row first, in eighth blocks."""
    nums = [v for v in values if v is not None]
    top = top if top is not None else max(nums, default=0)
    rows = []
    for level in range(height, 0, -1):
        line = []
        for v in values:
            filled = 0.0 if v is None or top <= 0 else v / top * height
            if v and v > 0 and filled < 1 / 8:
                filled = 1 / 8  # any work at all shows
            part = filled - (level - 1)
            line.append("█" if part >= 1 else " " if part <= 0 else EIGHTHS[max(0, min(7, round(part * 8) - 1))])
        rows.append("".join(line))
    return rows


def _figures(series: QueueSeries) -> tuple[list[float | None], list[float | None], list[float | None]]:
    done: list[float | None] = [float(m.completed) for m in series.minutes]
    dead: list[float | None] = [float(m.dead) for m in series.minutes]
    wait: list[float | None] = [m.wait_p95 for m in series.minutes]
    return done, dead, wait


def compact_chart(series: QueueSeries | None, width: int) -> Text:
    """The selected queue's hour in three lines that fit ``width`` columns."""
    if series is None:
        return Text("")
    cols = max(10, min(60, width - LABEL - 16))
    done, dead, wait = _figures(series)
    t = Text()
    t.append(f"{series.queue}", style="bold")
    t.append(" per minute, the last hour (oldest left) · g: the chart", style="dim")
    rows = (
        ("done", fold(done, cols), f"{series.completed:,}/h", palette.style("chart")),
        ("dead", fold(dead, cols), f"{series.dead:,}/h", palette.style("chart_failed")),
        ("wait", fold(wait, cols, max), f"p95 ≤ {duration(series.worst_wait())}", palette.style("chart_wait")),
    )
    for label, values, total, style in rows:
        t.append(f"\n{label:<{LABEL - 1}} ", style="dim")
        t.append(spark_line(values).ljust(cols), style=style)
        t.append(f" {total}")
    return t


def axis(cols: int) -> str:
    """The time axis under ``cols`` columns covering the hour: 60m ago at the left, now at the right."""
    line = [" "] * cols
    for label, at in (("-60m", 0), ("-30m", cols // 2 - 2), ("now", cols - 3)):
        for i, ch in enumerate(label):
            if 0 <= at + i < cols:
                line[at + i] = ch
    return "".join(line)


def full_chart(series: QueueSeries, width: int, heights: tuple[int, int, int] = (6, 2, 4)) -> Text:
    """The chart screen: completed, dead and wait (p95, with p50 now) per minute, each as bars
    over the hour with its scale at the left."""
    cols = max(10, min(60, width - 10))
    done, dead, wait = _figures(series)
    p50 = [m.wait_p50 for m in series.minutes]
    last = next((m for m in reversed(series.minutes) if m.wait_p50 is not None), None)
    blocks = (
        (
            f"completed per minute · {series.completed:,} in the hour",
            fold(done, cols),
            heights[0],
            palette.style("chart"),
            lambda v: f"{v:,.0f}",
        ),
        (
            f"dead per minute · {series.dead:,} in the hour",
            fold(dead, cols),
            heights[1],
            palette.style("chart_failed"),
            lambda v: f"{v:,.0f}",
        ),
        (
            "wait p95 per minute (due → claimed)"
            + (f" · latest p50 {duration(last.wait_p50)}, run p50 {duration(last.run_p50)}" if last else ""),
            fold(wait, cols, max),
            heights[2],
            palette.style("chart_wait"),
            duration,
        ),
    )
    t = Text()
    for i, (title, values, height, style, fmt) in enumerate(blocks):
        if i:
            t.append("\n")
        t.append(title, style="bold")
        nums = [v for v in values if v is not None]
        top = max(nums, default=0)
        for r, row in enumerate(bar_rows(values, height, top)):
            scale = fmt(top) if r == 0 and top > 0 else ""  # the top row's value; bars stand on zero
            t.append(f"\n{scale:>8} ", style="dim")
            t.append(row, style=style)
    t.append(f"\n{'':>8} {axis(cols)}", style="dim")
    if not any(p is not None for p in p50) and series.completed == 0:
        t.append("\nNothing completed in this queue in the last hour.", style="dim italic")
    return t
