"""MemoryDriver's worker area: registration rows, wake-ups, next due time and queue gauges, with
the same meaning as sql/queries/workers.sql, on the injected clock."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from engine.drivers.memory.state import CLAIMABLE, GaugeSnapshot, MemoryBase, MemoryState
from engine.records import WorkerRecord
from engine.types import (
    ClaimBatch,
    ClaimedJob,
    GaugeCount,
    Heartbeat,
    JobRow,
    JobState,
    QueueGauges,
    WorkerRegistration,
    gauges_at,
    ready_since,
)


def _claim(
    state: MemoryState,
    *,
    queues: Sequence[str],
    limit: int,
    worker: str,
    now: datetime,
    lease_seconds: float,
    after: Mapping[str, datetime],
) -> list[ClaimedJob]:
    """Lease up to ``limit`` due rows of unpaused ``queues`` to ``worker``, in claim order, each
    queue read from its floor in ``after`` (rows due at or after it) when it has one."""
    wanted = set(queues) - set(state.paused)
    with state.lock:
        due = [
            r
            for r in state.jobs.values()
            if r.queue in wanted
            and r.state in CLAIMABLE
            and r.run_at <= now
            and (r.queue not in after or r.run_at >= after[r.queue])
        ]
        due.sort(key=lambda r: (-r.priority, r.run_at, r.id))
        out = []
        for r in due[:limit]:
            row = replace(
                r,
                state=JobState.RUNNING,
                run=r.run + 1,
                attempt=r.attempt + 1,
                claimed_by=worker,
                claimed_at=now,
                lease_until=now + timedelta(seconds=lease_seconds),
                updated_at=now,
                finished_at=None,
                result=None,
                stop_reason=None,
            )
            state.put(row)
            out.append(ClaimedJob(row))
        return out


class MemoryWorkers(MemoryBase):
    async def worker_register(self, *, worker: WorkerRegistration, now: datetime) -> None:
        w, drain = worker, worker.drain or Heartbeat()
        row = WorkerRecord(
            w.id,
            w.host,
            w.pid,
            tuple(w.queues),
            w.concurrency,
            0,
            w.started_at or now,
            now,
            w.stopping,
            0.0,
            drain.drain_requested_by,
            drain.drain_requested_at,
            w.heartbeat_interval,
        )
        with self.state.lock:
            self.state.workers[w.id] = row
            self.state.drain_notes.pop(w.id, None)  # as worker_register's SQL: the note is not kept

    async def worker_heartbeat(self, *, id: str, in_use: int, stopping: bool, now: datetime) -> Heartbeat | None:
        with self.state.lock:
            w = self.state.workers.get(id)
            if w is None:
                return None
            self.state.workers[id] = replace(w, in_use=in_use, stopping=stopping, heartbeat_at=now)
            return Heartbeat(w.drain_requested_by, w.drain_requested_at)

    async def worker_deregister(self, *, id: str) -> None:
        with self.state.lock:
            self.state.workers.pop(id, None)
            self.state.presence.pop(id, None)

    async def worker_presence_hold(self, *, id: str) -> None:
        with self.state.lock:
            if id in self.state.workers:  # noted on its row, as worker_presence_record does
                self.state.presence[id] = True

    async def worker_presence_release(self, *, id: str) -> None:
        with self.state.lock:
            if id in self.state.presence:
                self.state.presence[id] = False

    async def worker_list(self, *, now: datetime) -> list[WorkerRecord]:
        with self.state.lock:
            ws = sorted(self.state.workers.values(), key=lambda w: w.id)
        return [replace(w, heartbeat_age=max(0.0, (now - w.heartbeat_at).total_seconds())) for w in ws]

    async def worker_claim(
        self,
        *,
        queues: Sequence[str],
        limit: int,
        worker: str,
        now: datetime,
        lease_seconds: float,
        after: Mapping[str, datetime] | None = None,
    ) -> ClaimBatch:
        floors = {q: at for q, at in (after or {}).items() if at is not None}
        jobs = _claim(
            self.state, queues=queues, limit=limit, worker=worker, now=now, lease_seconds=lease_seconds, after=floors
        )
        return ClaimBatch(jobs, self._next_due(queues, floors) if len(jobs) < limit else None)

    def _next_due(self, queues: Sequence[str], floors: Mapping[str, datetime]) -> datetime | None:
        # As worker_claim's SQL: per unpaused queue, the first ready row in claim order (from the
        # queue's floor), else the earliest other claimable row (the rows just claimed are running
        # now, so left out).
        wanted = set(queues) - set(self.state.paused)
        with self.state.lock:
            rows = [
                r
                for r in self.state.jobs.values()
                if r.queue in wanted
                and r.state in CLAIMABLE
                and (r.state is not JobState.READY or r.queue not in floors or r.run_at >= floors[r.queue])
            ]
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
        wake = self.state.wakeups
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
        self._wake(queues)

    async def queue_gauges(self, *, now: datetime, max_age: float = 0.0) -> list[QueueGauges]:
        with self.state.lock:
            snap = self.state.gauges
            if snap is None or snap.taken_at <= now - timedelta(seconds=max_age):
                snap = self.state.gauges = GaugeSnapshot(now, self._count_gauges(now))
        return gauges_at(snap.counts, now)

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
