"""Durations as the CLI and the console take and say them: ``parse_duration("5m")`` is 300.0
seconds (10s, 5m, 1.5h, 250ms, 2d; bare seconds), ``duration(300)`` is "5m00s", and
``relative(-90)`` is "1m30s ago" (``relative(255600)``: "in 2d23h").

``duration`` is the one way a span is said to a person, in a table, a why and a detail alike: its
two largest units (2d23h, not 71h, which hides the days and drops the minutes a day-long count
would), so a span reads the same wherever it is shown."""

from __future__ import annotations

import math
import re

from engine.errors import X_INVALID_ARGUMENT, JobsError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")


def parse_duration(text: str, flag: str = "--delay") -> float:
    """``text`` (10s, 5m, 1.5h, 250ms; bare seconds) in seconds, or X_INVALID_ARGUMENT naming ``flag``."""
    m = _DURATION.match(text or "")
    if not m:
        raise JobsError(X_INVALID_ARGUMENT, cause=f"{flag} {text!r} is not a duration", fix=f"{flag} 10s")
    scale = {"ms": 0.001, "s": 1, None: 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    return float(m.group(1)) * scale


def duration(seconds: float | None) -> str:
    """A compact duration: 45s, 3m20s, 2h05m, 4d02h; sub-second as ms."""
    if seconds is None:
        return "—"
    s = float(seconds)
    neg = s < 0
    s = abs(s)
    if s < 1:
        out = f"{int(s * 1000)}ms"
    elif s < 60:
        out = f"{s:.0f}s" if s >= 10 else f"{s:.1f}s".replace(".0s", "s")
    elif s < 3600:
        out = f"{int(s // 60)}m{int(s % 60):02d}s"
    elif s < 86400:
        out = f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m"
    else:
        out = f"{int(s // 86400)}d{int(s % 86400 // 3600):02d}h"
    return f"-{out}" if neg else out


def relative(seconds: float) -> str:
    """A span from now said as ``duration`` says it: "in 2d23h" ahead, "1m30s ago" behind; under
    a second either way, "in under a second" or "under a second ago" (never "in 0ms"). Zero is
    ahead and -0.0 behind: an age of zero, negated (``relative(-age)``), is "under a second ago"."""
    ahead = math.copysign(1.0, seconds) > 0
    if abs(seconds) < 1:
        return "in under a second" if ahead else "under a second ago"
    return f"in {duration(seconds)}" if ahead else f"{duration(-seconds)} ago"
