"""Where a worker's next claim starts reading each queue: past the rows its claims took.

A claim leaves the row version it took behind (the row is updated to running), and its entry in
the claim index stays until VACUUM removes it, or until a scan that finds the version dead to
every snapshot marks the entry dead. Under a long snapshot (a session idle in transaction, a long
REPEATABLE READ reader) neither happens, so a claim that starts at the head of a queue steps over
every row claimed since that snapshot began, a heap visit each: the claim grows slower with every
job and a fleet falls behind. The worker remembers, per queue, the latest due time (run_at) it
has claimed, and its next claim reads only rows due at or after it: an index condition, so the
entries before it are passed over without visiting the heap.

A row due before that point is not lost: a released job keeps its place in the queue, a lower
priority waits behind a higher one, a job can be enqueued with a past run_at. A full claim from
the head of every queue runs at least every FULL_EVERY seconds (no more often than FULL_SHARE
times its own duration, so a slow one costs a bounded share of the claims' time), and again at
once while a full claim still finds such rows. A delayed row falls due at its own run_at, which
may lie before a floor: when a short claim says the next row falls due before a floor, the claim
at that moment is a full one, so a delayed job starts on time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from engine.types import ClaimedJob

FULL_EVERY = 1.0  # seconds between full claims, at least
FULL_SHARE = 20  # ... and at least this many times the last full claim's own duration
# A queue's floor lies this far before the latest run_at claimed there. Producers commit out of
# order: a job enqueued (its run_at stamped) a moment before another can commit a moment after
# that one was claimed, and without the slack it would wait for the next full claim (up to
# FULL_EVERY: 650 ms at the p99 of a 1,000 jobs/s stream). Under a long snapshot a claim then
# steps over at most a second's worth of the versions its claims left, not all of them.
SLACK = timedelta(seconds=1)


class ClaimFloors:
    """Per queue, the latest run_at claimed (its floor is SLACK before it); and when the next
    full claim is due."""

    __slots__ = ("_floor", "_full_at")

    def __init__(self) -> None:
        self._floor: dict[str, datetime] = {}
        self._full_at = 0.0

    def after(self, now: float) -> Mapping[str, datetime] | None:
        """The floors for a claim starting at monotonic time ``now``; None: a full claim."""
        if now >= self._full_at or not self._floor:
            return None
        return {queue: latest - SLACK for queue, latest in self._floor.items()}

    def claimed(
        self, jobs: Sequence[ClaimedJob], *, after: Mapping[str, datetime] | None, started: float, now: float
    ) -> None:
        """Record a claim made with floors ``after`` (None: full) that ran from ``started`` to ``now``."""
        behind = False  # a full claim took a row due before its queue's floor
        for cj in jobs:
            row = cj.row
            latest = self._floor.get(row.queue)
            if latest is None or row.run_at > latest:
                self._floor[row.queue] = row.run_at
            elif after is None and row.run_at < latest - SLACK:
                behind = True
        if after is None:
            self._full_at = now if behind else now + max(FULL_EVERY, FULL_SHARE * (now - started))

    def due(self, at: datetime | None, *, wall: datetime, now: float) -> None:
        """A short claim said the next row falls due ``at`` (wall clock ``wall`` at monotonic
        ``now``): if that is before a floor, the claim made then is a full one."""
        if at is not None and self._floor and at < max(self._floor.values()) - SLACK:
            self._full_at = min(self._full_at, now + max(0.0, (at - wall).total_seconds()))

    def full_next(self) -> None:
        """The next claim is a full one (a burst worker decides it is done only on a full claim)."""
        self._full_at = 0.0
