"""MemoryDriver's read models: the same meaning as sql/queries/introspect.sql, on plain collections.

``budget_ms`` bounds a database statement; the memory driver has no statement to cut off, and
answers from memory at once, so it accepts the budget and has nothing to enforce.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta

from engine.drivers.jobfilter import column_matches, search_terms
from engine.drivers.memory.state import MemoryBase, RolledMinute, minute_of, rolled_minute
from engine.drivers.memory.steps import jsonb_contains
from engine.projections import (
    Count,
    DeadGroup,
    DeadLetters,
    JobFilter,
    JobPage,
    JobSummary,
    LimitState,
    QueuePause,
    QueueStats,
    SlotHolder,
    WaitGroup,
    latest_fix,
)
from engine.series import MinuteFigures, QueueSeries
from engine.types import JobRow, JobState, StopReason, ready_since

_HOUR, _MINUTE = timedelta(hours=1), timedelta(minutes=1)


def capped(n: int, cap: int) -> Count:
    return Count(n) if n <= cap else Count(cap, "at-least")


def matches(row: JobRow, where: JobFilter) -> bool:
    """The WHERE clause of job_page, in Python."""
    if where.queue is not None and row.queue != where.queue:
        return False
    if where.state is not None and row.state is not where.state:
        return False
    if where.name is not None and row.name != where.name:
        return False
    if where.tenant is not None and row.tenant != where.tenant:
        return False
    if not column_matches(row.error_code, where.error_code):
        return False
    if not column_matches(row.stop_reason, where.stop_reason):
        return False
    if where.since is not None and row.created_at < where.since:
        return False
    if where.until is not None and row.created_at >= where.until:
        return False
    # The SQL's `input @> {F: V, ...}`: 42 matches 42 and 42.0, never "42"; ["a"] matches a list
    # that holds "a"; True is not 1.
    if where.input_fields and not jsonb_contains(row.input, dict(where.input_fields)):
        return False
    if where.search is not None:
        key, span = search_terms(where.search)
        if span is not None and not span[0] <= row.id <= span[1]:
            return False
        if key is not None and not row.idempotency_key.startswith(key):
            return False
    return True


def summary(row: JobRow) -> JobSummary:
    return JobSummary.of(row)


class MemoryIntrospect(MemoryBase):
    async def queue_stats(self, *, now: datetime, count_cap: int, budget_ms: int | None) -> list[QueueStats]:
        with self.state.lock:
            names = {r.queue for r in self.state.jobs.values()} | set(self.state.paused) | self.state.queues
            counts: dict[str, dict[JobState, int]] = defaultdict(lambda: defaultdict(int))
            oldest: dict[str, datetime] = {}
            # As queue_throughput: calendar minutes, rolled ones from the rollup, later rows counted.
            done: dict[str, list[int]] = defaultdict(lambda: [0] * 60)
            this_minute = minute_of(now)
            lo = this_minute - _HOUR + _MINUTE
            roll = self.state.rollup
            rolled = roll.rolled if roll.rolled is not None else datetime.min.replace(tzinfo=now.tzinfo)
            for (minute, queue), fig in roll.minutes.items():
                if lo <= minute < rolled and minute <= this_minute:
                    done[queue][59 - (this_minute - minute) // _MINUTE] += fig.completed
            for r in self.state.jobs.values():
                counts[r.queue][r.state] += 1
                since = ready_since(r, now)
                if since is not None and (r.queue not in oldest or since < oldest[r.queue]):
                    oldest[r.queue] = since
                if (
                    r.state is JobState.COMPLETED
                    and r.finished_at is not None
                    and max(lo, rolled) <= r.finished_at <= now
                ):
                    done[r.queue][59 - (this_minute - minute_of(r.finished_at)) // _MINUTE] += 1
            out = []
            for q in sorted(names):
                c = counts[q]
                pause = self.state.paused.get(q)
                out.append(
                    QueueStats(
                        q,
                        ready=capped(c[JobState.READY], count_cap),
                        delayed=capped(c[JobState.DELAYED], count_cap),
                        running=capped(c[JobState.RUNNING], count_cap),
                        suspended=capped(c[JobState.SUSPENDED], count_cap),
                        parked=capped(c[JobState.PARKED], count_cap),
                        dead=Count(c[JobState.DEAD]),  # exact, as PostgreSQL's counts per group
                        completed_last_hour=capped(sum(done[q]), count_cap),
                        oldest_ready_at=oldest.get(q),
                        oldest_ready_age=(now - oldest[q]).total_seconds() if q in oldest else None,
                        throughput=tuple(done[q]),
                        workers=0,
                        slots_total=0,
                        slots_in_use=0,
                        paused=pause is not None,
                        paused_by=pause.by if pause else None,
                        paused_at=pause.at if pause else None,
                        pause_note=pause.note if pause else None,
                    )
                )
            return out

    async def queue_series(self, *, queue: str, now: datetime, budget_ms: int | None) -> QueueSeries:
        with self.state.lock:
            # As queue_series in SQL: rolled minutes from the rollup, the rows after it counted.
            this_minute = minute_of(now)
            lo = this_minute - _HOUR + _MINUTE
            roll = self.state.rollup
            rolled = roll.rolled if roll.rolled is not None else datetime.min.replace(tzinfo=now.tzinfo)
            figures = {
                minute: fig
                for (minute, q), fig in roll.minutes.items()
                if q == queue and lo <= minute < rolled and minute <= this_minute
            }
            live: dict[datetime, list[JobRow]] = defaultdict(list)
            for r in self.state.jobs.values():
                if (
                    r.queue == queue
                    and r.state in (JobState.COMPLETED, JobState.DEAD)
                    and r.finished_at is not None
                    and max(lo, rolled) <= r.finished_at <= now
                ):
                    live[minute_of(r.finished_at)].append(r)
            figures.update({minute: rolled_minute(rows) for minute, rows in live.items()})
            minutes = []
            for i in range(60):
                at = lo + i * _MINUTE
                fig = figures.get(at, RolledMinute())
                minutes.append(MinuteFigures(at, fig.completed, fig.dead, fig.wait_p50, fig.wait_p95, fig.run_p50))
            return QueueSeries(queue, now, tuple(minutes))

    async def job_page(
        self, *, where: JobFilter, limit: int, cursor: str | None, count_cap: int, budget_ms: int | None
    ) -> JobPage:
        with self.state.lock:
            hits = sorted((r for r in self.state.jobs.values() if matches(r, where)), key=lambda r: r.id, reverse=True)
        total = capped(len(hits), count_cap)
        if cursor is not None:
            hits = [r for r in hits if r.id < cursor]
        page = hits[:limit]
        nxt = page[-1].id if len(hits) > limit else None
        return JobPage(tuple(summary(r) for r in page), nxt, total)

    async def dead_groups(self, *, where: JobFilter, now: datetime, budget_ms: int | None) -> DeadLetters:
        with self.state.lock:
            dead = [r for r in self.state.jobs.values() if r.state is JobState.DEAD and matches(r, where)]
        groups: dict[tuple[str, str | None, StopReason | None], list[JobRow]] = defaultdict(list)
        for r in dead:
            groups[(r.name, r.error_code, r.stop_reason)].append(r)
        out = []
        for (name, code, reason), rows in groups.items():
            seen = [r.finished_at or r.updated_at for r in rows]
            last = max(rows, key=lambda r: (r.finished_at or r.updated_at, r.id))
            out.append(
                DeadGroup(
                    name=name,
                    error_code=code,
                    stop_reason=reason,
                    count=len(rows),
                    first_seen=min(seen),
                    last_seen=max(seen),
                    last_error=last.last_error,
                    last_job_id=last.id,
                    attempt=last.attempt,
                    max_attempts=last.max_attempts,
                    tenants=len({r.tenant or "" for r in rows}),
                    last_fix=latest_fix(self.state.attempts.get(last.id, [])),
                )
            )
        # The SQL's order: last seen newest first, then name, code and stop reason ascending (none first).
        out.sort(key=lambda g: (g.name, g.error_code or "", g.stop_reason or ""))
        out.sort(key=lambda g: g.last_seen, reverse=True)
        return DeadLetters(now, tuple(out), Count(len(dead)))  # each group's count is exact: so is the sum

    async def job_duplicate(self, *, job_id: str) -> JobSummary | None:
        with self.state.lock:
            row = self.state.jobs.get(job_id)
            if row is None:
                return None
            holder = self.state.live_holder(row)
            if holder is None or holder == job_id:
                return None
            return summary(self.state.jobs[holder])

    async def role_may_act(self) -> str | None:
        return None  # one process, no roles

    async def queue_get(self, *, queue: str) -> QueuePause:
        with self.state.lock:
            p = self.state.paused.get(queue)
        if p is None:
            return QueuePause(queue, False, changed=False)
        return QueuePause(queue, True, p.by, p.at, p.note, changed=False)

    async def limit_state(self, *, keys: Sequence[str], now: datetime) -> list[LimitState]:
        """The stored slot rows and rate bucket of each key (jobs.slot, jobs.rate_bucket)."""
        with self.state.lock:
            out = []
            for key in keys:
                held = tuple(
                    _holder(v.job_id, v.worker, v.lease_until, self.state.jobs.get(v.job_id or ""))
                    for (k, _), v in sorted(self.state.slots.items())
                    if k == key
                )
                b = self.state.buckets.get(key)
                if held or b is not None:
                    out.append(LimitState(key, held, b.tokens if b else None, b.refilled_at if b else None))
            return out

    async def queue_waits(self, *, queue: str, now: datetime, budget_ms: int | None) -> list[WaitGroup]:
        """queue_waits in sql/queries/introspect.sql: the queue's not-claimable jobs by what they wait for."""
        groups: dict[tuple[str, str, str | None], list[datetime]] = defaultdict(list)
        with self.state.lock:
            for r in self.state.jobs.values():
                if r.queue != queue or r.state not in _WAITING or (r.state is JobState.DELAYED and r.run_at <= now):
                    continue
                w = r.wait or {}
                if r.state is JobState.DELAYED:
                    kind, key = "delay", None
                elif r.state is JobState.PARKED:
                    kind, key = w.get("limit") or w.get("kind") or "limit", w.get("key")
                else:
                    kind, key = w.get("kind") or "sleep", w.get("event") if w.get("kind") == "event" else None
                groups[(r.state.value, kind, key)].append(r.run_at)
        out = [WaitGroup(JobState(st), kind, key, len(ts), min(ts)) for (st, kind, key), ts in groups.items()]
        # The SQL's order: most jobs first, then state, kind and key (a null key last).
        out.sort(key=lambda g: (-g.count, g.state.value, g.kind, g.key is None, g.key or ""))
        return out[:20]


_WAITING = frozenset({JobState.DELAYED, JobState.PARKED, JobState.SUSPENDED})


def _holder(job_id: str | None, worker: str | None, lease_until: datetime | None, job: JobRow | None) -> SlotHolder:
    if job is None:
        return SlotHolder(job_id, worker, lease_until)
    running = job.state is JobState.RUNNING
    return SlotHolder(job_id, worker, lease_until, job.state, job.claimed_at if running else None)


__all__ = ["MemoryIntrospect", "matches", "summary"]
