"""A text sparkline: fits in a table cell, reads without colour."""

from __future__ import annotations

from collections.abc import Sequence

BARS = "▁▂▃▄▅▆▇█"


def spark(values: Sequence[float], width: int = 20, *, low: float = 0.0) -> str:
    """The last ``width`` values, scaled to the largest; ``low`` (zero unless given: the smallest
    value, for a trend of a figure that never nears zero) is a flat baseline."""
    vals = [v - low for v in list(values)[-width:]]
    if not vals:
        return ""
    top = max(vals)
    if top <= 0:
        return BARS[0] * len(vals)
    # The baseline is the lowest bar; anything above it shows at least one step up.
    return "".join(BARS[max(1, round(v / top * (len(BARS) - 1)))] if v > 0 else BARS[0] for v in vals)


def bucket(values: Sequence[float], width: int) -> list[float]:
    """Fold a longer series into ``width`` buckets by summing neighbours."""
    vals = list(values)
    if len(vals) <= width or width <= 0:
        return vals
    size = len(vals) / width
    return [sum(vals[int(i * size) : int((i + 1) * size)]) for i in range(width)]
