"""The completion timeline, and recovery measured from it.

The harness samples the completed count every ``interval`` seconds on a connection of its own
(reopened when a fault ends it). Completions need the database, so a sample missed while it is
away loses nothing: the next one counts them. The time axis is the harness's monotonic clock,
never a worker's (their clocks are skewed on purpose).

For a fault at ``t``: the rate before is the completions in [t - window, t] over the window; the
rate after, those in [t, t + window]; their ratio is the first figure. The recovery time is the
first ``tau`` from which the rate over [t + tau, t + tau + 1 s] is back within 10% of the rate
before (at least 90% of it): how long the fleet took to be itself again. The dip is the lowest
1-second rate in the window after, over the rate before.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from dataclasses import dataclass, field

import psycopg

from bench.torture.sqlq import sql

WINDOW = 30.0
PROBE = 1.0
WITHIN = 0.9


@dataclass
class Sampler:
    dsn: str
    interval: float = 0.25
    times: list[float] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    failures: int = 0

    async def run(self) -> None:
        conn: psycopg.AsyncConnection[tuple[int]] | None = None
        while True:
            try:
                if conn is None or conn.closed:
                    conn = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True, connect_timeout=2)
                row = await (await conn.execute(sql("torture_completed"))).fetchone()  # type: ignore[arg-type]
                assert row is not None
                self.times.append(time.monotonic())
                self.counts.append(int(row[0]))
            except asyncio.CancelledError:
                if conn is not None:
                    await conn.close()
                raise
            except Exception:
                self.failures += 1
                if conn is not None:
                    try:
                        await conn.close()
                    except Exception:
                        pass
                conn = None
            await asyncio.sleep(self.interval)

    def count_at(self, t: float) -> float:
        """The completed count at ``t``, linear between the samples around it."""
        if not self.times:
            return 0.0
        i = bisect.bisect_left(self.times, t)
        if i <= 0:
            return float(self.counts[0])
        if i >= len(self.times):
            return float(self.counts[-1])
        t0, t1 = self.times[i - 1], self.times[i]
        c0, c1 = self.counts[i - 1], self.counts[i]
        return c0 + (c1 - c0) * ((t - t0) / (t1 - t0) if t1 > t0 else 1.0)

    def rate(self, a: float, b: float) -> float:
        return (self.count_at(b) - self.count_at(a)) / (b - a) if b > a else 0.0

    @property
    def end(self) -> float:
        return self.times[-1] if self.times else 0.0


@dataclass(frozen=True)
class Recovery:
    kind: str
    at: float  # seconds from the start of the run
    before: float  # completions a second in the window before
    after: float  # in the window after
    ratio: float | None  # after / before
    recovered: float | None  # seconds until the rate is back within 10%; None: not within the window
    full_window: bool  # both windows lie inside the measured run
    dip: float | None = None  # the lowest 1-second rate after the fault, over the rate before


def recovery(s: Sampler, kind: str, t: float, start: float, end: float, window: float = WINDOW) -> Recovery:
    """The figures of the fault at ``t``, inside the load's span [start, end] (after the load
    ends, completions fall for want of work, not because of a fault)."""
    end = min(end, s.end)
    before = s.rate(max(start, t - window), t)
    after = s.rate(t, min(end, t + window))
    ratio = after / before if before > 0 else None
    recovered: float | None = None
    if before > 0:
        tau = 0.0
        while t + tau + PROBE <= min(end, t + window):
            if s.rate(t + tau, t + tau + PROBE) >= WITHIN * before:
                recovered = tau
                break
            tau += 0.25
    full = t - window >= start and t + window <= end
    lows = [
        s.rate(t + k * 0.25, t + k * 0.25 + PROBE)
        for k in range(int(max(0.0, min(end, t + window) - t - PROBE) / 0.25) + 1)
    ]
    dip = min(lows) / before if lows and before > 0 else None
    return Recovery(kind, t - start, before, after, ratio, recovered, full, dip)
