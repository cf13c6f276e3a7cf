"""Leaf module: a queue's figures over time, minute by minute (the console's charts).

``QueueSeries``: the 60 calendar minutes up to now (the last one under way), each with its
completions, its jobs that went dead, and the latency of its completions: ``wait``, from when its
last run fell due (its run_at: a retry's, a wake-up's, a shed job's next try) to when a worker
claimed it; ``run``, from that claim to its completion. Minutes the maintenance leader has rolled up
(jobs.throughput_minute) are read from the rollup, later ones counted from the jobs, so a read
costs the same at any completion rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class MinuteFigures:
    minute: datetime  # the calendar minute's start (UTC)
    completed: int
    dead: int
    wait_p50: float | None  # seconds; None: nothing completed in the minute
    wait_p95: float | None
    run_p50: float | None


@dataclass(frozen=True)
class QueueSeries:
    queue: str
    at: datetime
    minutes: tuple[MinuteFigures, ...]  # oldest first; the last is the minute under way

    @property
    def completed(self) -> int:
        return sum(m.completed for m in self.minutes)

    @property
    def dead(self) -> int:
        return sum(m.dead for m in self.minutes)

    def worst_wait(self) -> float | None:
        """The highest per-minute p95 wait of the hour."""
        waits = [m.wait_p95 for m in self.minutes if m.wait_p95 is not None]
        return max(waits) if waits else None


def percentile_disc(values: Sequence[float], fraction: float) -> float | None:
    """As SQL's percentile_disc: the first value whose cumulative share reaches ``fraction``."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]
