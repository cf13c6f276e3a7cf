"""MemoryDriver's worker area: registration rows, wake-ups, next due time and queue gauges, with
the same meaning as sql/queries/worker.sql, on the injected clock."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from engine.drivers.memory.state import MemoryState
from engine.types import (
    ClaimBatch,
    EnqueueResult,
    GaugeCount,
    JobRow,
    JobState,
    NewJob,
    QueueGauges,
    WorkerRecord,
    gauges_at,
    ready_since,
)

_CLAIMABLE = frozenset({JobState.READY, JobState.DELAYED, JobState.PARKED, JobState.SUSPENDED})


class _Wakeups:
    """LISTEN/NOTIFY for one process: waiters on any loop, woken thread-safely."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.waiters: list[tuple[frozenset[str], asyncio.AbstractEventLoop, asyncio.Future[bool]]] = []

    def notify(self, queues: set[str]) -> None:
        with self.lock:
            hit = [w for w in self.waiters if w[0] & queues]
            self.waiters = [w for w in self.waiters if not (w[0] & queues)]
        for _, loop, fut in hit:
            loop.call_soon_threadsafe(_resolve, fut)


def _resolve(fut: asyncio.Future[bool]) -> None:
    if not fut.done():
        fut.set_result(True)


class MemoryWorkers:
    state: MemoryState

    def _workers(self) -> dict[str, WorkerRecord]:
        return self.state.extra.setdefault("workers", {})  # type: ignore[no-any-return]

    def _wakeups(self) -> _Wakeups:
        with self.state.lock:
            return self.state.extra.setdefault("wakeups", _Wakeups())  # type: ignore[no-any-return]

    async def job_enqueue(self, *, jobs: Sequence[NewJob], now: datetime) -> list[EnqueueResult]:
        # The SQL statement sends pg_notify for the queues it inserted into; this is the same.
        out: list[EnqueueResult] = await super().job_enqueue(jobs=jobs, now=now)  # type: ignore[misc]
        fresh = {j.queue for j, r in zip(jobs, out) if not r.deduped}
        if fresh:
            self._wakeups().notify(fresh)
        return out

    async def worker_register(
        self, *, id: str, host: str, pid: int, queues: Sequence[str], concurrency: int, now: datetime
    ) -> None:
        with self.state.lock:
            self._workers()[id] = WorkerRecord(id, host, pid, tuple(queues), concurrency, 0, now, now, False, 0.0)

    async def worker_heartbeat(self, *, id: str, in_use: int, stopping: bool, now: datetime) -> bool:
        with self.state.lock:
            w = self._workers().get(id)
            if w is None:
                return False
            self._workers()[id] = replace(w, in_use=in_use, stopping=stopping, heartbeat_at=now)
            return True

    async def worker_deregister(self, *, id: str) -> None:
        with self.state.lock:
            self._workers().pop(id, None)

    async def worker_list(self, *, now: datetime) -> list[WorkerRecord]:
        with self.state.lock:
            ws = sorted(self._workers().values(), key=lambda w: w.id)
        return [replace(w, heartbeat_age=max(0.0, (now - w.heartbeat_at).total_seconds())) for w in ws]

    async def worker_claim(
        self, *, queues: Sequence[str], limit: int, worker: str, now: datetime, lease_seconds: float
    ) -> ClaimBatch:
        # The same lease as job_claim: the SQL differs only in how Postgres plans it.
        jobs = await self.job_claim(  # type: ignore[attr-defined]
            queues=queues,
            limit=limit,
            worker=worker,
            now=now,
            lease_seconds=lease_seconds,
        )
        return ClaimBatch(jobs, self._next_due(queues) if len(jobs) < limit else None)

    def _next_due(self, queues: Sequence[str]) -> datetime | None:
        # As worker_claim's SQL: per unpaused queue, the first ready row in claim order, else the
        # earliest other claimable row (the rows just claimed are running now, so left out).
        wanted = set(queues) - set(self.state.paused)
        with self.state.lock:
            rows = [r for r in self.state.jobs.values() if r.queue in wanted and r.state in _CLAIMABLE]
        due = [r.run_at for r in rows if r.state is not JobState.READY]
        first_ready: dict[str, JobRow] = {}
        for r in rows:
            if r.state is JobState.READY:
                best = first_ready.get(r.queue)
                if best is None or (-r.priority, r.run_at, r.id) < (-best.priority, best.run_at, best.id):
                    first_ready[r.queue] = r
        due += [r.run_at for r in first_ready.values()]
        return min(due) if due else None

    async def queue_wait(self, *, queues: Sequence[str], timeout: float) -> bool:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        entry = (frozenset(queues), loop, fut)
        wake = self._wakeups()
        with wake.lock:
            wake.waiters.append(entry)
        # Not asyncio.wait_for: on 3.11 it swallows a cancellation that races the wake-up.
        timer = loop.call_later(timeout, _time_out, fut)
        try:
            return await fut
        finally:
            timer.cancel()
            with wake.lock:
                if entry in wake.waiters:
                    wake.waiters.remove(entry)

    async def queue_notify(self, *, queues: Sequence[str]) -> None:
        self._wakeups().notify(set(queues))

    async def queue_gauges(self, *, now: datetime, max_age: float = 0.0) -> list[QueueGauges]:
        with self.state.lock:
            taken_at, counts = self.state.extra.get("gauge_snapshot", (None, []))
            if taken_at is None or taken_at <= now - timedelta(seconds=max_age):
                counts = self._count_gauges(now)
                self.state.extra["gauge_snapshot"] = (now, counts)
        return gauges_at(counts, now)

    def _count_gauges(self, now: datetime) -> list[GaugeCount]:
        acc: dict[str, tuple[int, datetime | None, int]] = {}
        for r in self.state.jobs.values():
            began = ready_since(r, now)  # as the queues view measures it
            if began is None and r.state is not JobState.DEAD:
                continue
            depth, since, dead = acc.get(r.queue, (0, None, 0))
            if began is None:
                dead += 1
            else:
                depth += 1
                since = began if since is None else min(since, began)
            acc[r.queue] = (depth, since, dead)
        return [(q, depth, since, dead) for q, (depth, since, dead) in sorted(acc.items())]


def _time_out(fut: asyncio.Future[bool]) -> None:
    if not fut.done():
        fut.set_result(False)
