"""PostgresDriver's read models: each runs named statements of sql/queries/introspect.sql inside
one transaction bounded by the caller's budget (SET LOCAL statement_timeout via set_config)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from engine.drivers.jobfilter import equal_or_null, search_terms
from engine.drivers.postgres.base import Conn, PostgresBase
from engine.drivers.sqlfiles import Q
from engine.types import JobState

if TYPE_CHECKING:  # each read imports the read models it builds: a worker process never loads them
    from engine.projections import (
        Count,
        DeadLetters,
        JobFilter,
        JobPage,
        JobSummary,
        LimitState,
        QueuePause,
        QueueStats,
        SlotHolder,
        WaitGroup,
    )
    from engine.series import QueueSeries


def _like_prefix(s: str) -> str:
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def filter_params(where: JobFilter) -> dict[str, Any]:
    """The filter as statement parameters; None leaves a condition out (custom plans fold it)."""
    lo = hi = key_like = None
    if where.search is not None:
        key, span = search_terms(where.search)
        key_like = None if key is None else _like_prefix(key)
        lo, hi = span if span is not None else (None, None)
    code, no_code = equal_or_null(where.error_code)
    stop, no_stop = equal_or_null(where.stop_reason)
    return {
        "queue": where.queue,
        "state": where.state.value if where.state else None,
        "name": where.name,
        "tenant": where.tenant,
        "code": code,
        "no_code": no_code,
        "input": json.dumps(dict(where.input_fields)) if where.input_fields else None,
        "key_like": key_like,
        "id_lo": lo,
        "id_hi": hi,
        "since": where.since,
        "until": where.until,
        "stop": stop,
        "no_stop": no_stop,
    }


def capped(n: int, cap: int) -> Count:
    from engine.projections import Count

    return Count(n) if n <= cap else Count(cap, "at-least")


def summary_row(d: dict[str, Any]) -> JobSummary:
    from engine.projections import JobSummary

    return JobSummary(
        id=str(d["id"]),
        name=d["name"],
        queue=d["queue"],
        tenant=d["tenant"],
        state=JobState(d["state"]),
        idempotency_key=d["idempotency_key"],
        priority=d["priority"],
        attempt=d["attempt"],
        max_attempts=d["max_attempts"],
        run_at=d["run_at"],
        created_at=d["created_at"],
        updated_at=d["updated_at"],
        finished_at=d["finished_at"],
        error_code=d["error_code"],
        stop_reason=d["stop_reason"],
    )


def series_of(queue: str, now: datetime, rows: dict[int, dict[str, Any]]) -> QueueSeries:
    """queue_series's rows (minute 0: the one under way) as the 60 minutes, oldest first."""
    from engine.series import MinuteFigures, QueueSeries

    this_minute = now.replace(second=0, microsecond=0)

    def seconds(ms: int | None) -> float | None:
        return None if ms is None else ms / 1000

    minutes = []
    for ago in range(59, -1, -1):
        r = rows.get(ago) or {}
        minutes.append(
            MinuteFigures(
                this_minute - timedelta(minutes=ago),
                r.get("completed") or 0,
                r.get("dead") or 0,
                seconds(r.get("wait_p50_ms")),
                seconds(r.get("wait_p95_ms")),
                seconds(r.get("run_p50_ms")),
            )
        )
    return QueueSeries(queue, now, tuple(minutes))


def pause_row(queue: str, d: dict[str, Any] | None, *, changed: bool = False) -> QueuePause:
    from engine.projections import QueuePause

    if d is None:
        return QueuePause(queue, False, changed=changed)
    return QueuePause(d["name"], bool(d["paused"]), d["paused_by"], d["paused_at"], d["note"], changed=changed)


class PostgresIntrospect(PostgresBase):
    async def queue_stats(self, *, now: datetime, count_cap: int, budget_ms: int | None) -> list[QueueStats]:
        from engine.projections import Count, QueueStats

        async def read(conn: Conn) -> list[QueueStats]:
            running = {r["name"]: r["n"] for r in await self._rows(Q.queue_running, {}, conn=conn)}
            names = sorted({r["name"] for r in await self._rows(Q.queue_names, {}, conn=conn)} | set(running))
            if not names:
                return []
            p = {"queues": names, "now": now, "cap": count_cap}
            counts: dict[str, dict[str, int]] = defaultdict(dict)
            for q, n in running.items():
                counts[q]["running"] = n
            for r in await self._rows(Q.queue_counts, p, conn=conn):
                counts[r["name"]][r["state"]] = r["n"]
            # A count that passed its cap answers the planner's estimate when that says more (a
            # backlog of 1.2M reads "~1200000", not "≥10000"); else it stays "at least the cap".
            estimates: dict[tuple[str, str], int] = {}
            for q, by_state in counts.items():
                for state, n in by_state.items():
                    if n > count_cap and state not in ("running", "dead"):
                        plan = await self._row(Q.queue_count_estimate, {"queue": q, "state": state}, conn=conn)
                        assert plan is not None  # explain answers one row
                        estimates[(q, state)] = int(plan["QUERY PLAN"][0]["Plan"]["Plan Rows"])

            def count(q: str, state: str) -> Count:
                n = counts[q].get(state, 0)
                guess = estimates.get((q, state), 0)
                return Count(guess, "estimate") if n > count_cap and guess > count_cap else capped(n, count_cap)

            oldest = {r["name"]: r["oldest"] for r in await self._rows(Q.queue_oldest_ready, p, conn=conn)}
            done: dict[str, list[int]] = defaultdict(lambda: [0] * 60)
            for r in await self._rows(Q.queue_throughput, p, conn=conn):
                done[r["name"]][59 - r["minute"]] += r["n"]
            pauses = {r["name"]: r for r in await self._rows(Q.queue_pauses, {}, conn=conn)}
            out = []
            for q in names:
                c, pz, old = counts[q], pauses.get(q), oldest.get(q)
                paused = bool(pz and pz["paused"])
                out.append(
                    QueueStats(
                        q,
                        ready=count(q, "ready"),
                        delayed=count(q, "delayed"),
                        running=capped(c.get("running", 0), count_cap),
                        suspended=count(q, "suspended"),
                        parked=count(q, "parked"),
                        dead=Count(c.get("dead", 0)),  # summed from the counts kept per group: exact
                        completed_last_hour=capped(sum(done[q]), count_cap),
                        oldest_ready_at=old,
                        oldest_ready_age=(now - old).total_seconds() if old else None,
                        throughput=tuple(done[q]),
                        workers=0,
                        slots_total=0,
                        slots_in_use=0,
                        paused=paused,
                        paused_by=pz["paused_by"] if paused and pz else None,
                        paused_at=pz["paused_at"] if paused and pz else None,
                        pause_note=pz["note"] if paused and pz else None,
                    )
                )
            return out

        return await self._budgeted(budget_ms, "queues", read)

    async def queue_series(self, *, queue: str, now: datetime, budget_ms: int | None) -> QueueSeries:
        async def read(conn: Conn) -> QueueSeries:
            rows = {r["minute"]: r for r in await self._rows(Q.queue_series, {"queue": queue, "now": now}, conn=conn)}
            return series_of(queue, now, rows)

        return await self._budgeted(budget_ms, "queues", read)

    async def job_page(
        self, *, where: JobFilter, limit: int, cursor: str | None, count_cap: int, budget_ms: int | None
    ) -> JobPage:
        from engine.projections import JobPage

        p = filter_params(where) | {"cursor": cursor, "limit": limit + 1, "cap": count_cap}

        async def read(conn: Conn) -> JobPage:
            rows = await self._rows(Q.job_page, p, conn=conn)
            counted = await self._row(Q.job_page_count, p, conn=conn)
            n = counted["n"] if counted else 0
            items = tuple(summary_row(r) for r in rows[:limit])
            return JobPage(items, items[-1].id if len(rows) > limit else None, capped(n, count_cap))

        return await self._budgeted(budget_ms, "ls", read)

    async def dead_groups(self, *, where: JobFilter, now: datetime, budget_ms: int | None) -> DeadLetters:
        from engine.projections import Count, DeadGroup, DeadLetters

        # The counts kept per group answer a filter of their own columns; any other reads the rows.
        counted = not (where.input_fields or where.search or where.since or where.until)
        query = Q.dead_groups_counted if counted else Q.dead_groups

        async def read(conn: Conn) -> DeadLetters:
            rows = await self._rows(query, filter_params(where), conn=conn)
            groups = tuple(
                DeadGroup(
                    r["name"],
                    r["error_code"],
                    r["stop_reason"],
                    r["n"],
                    r["first_seen"],
                    r["last_seen"],
                    r["last_error"],
                    str(r["last_job_id"]),
                    r["attempt"],
                    r["max_attempts"],
                    r["tenants"],
                    r["last_fix"],
                )
                for r in rows
            )
            # Every dead letter was counted (its group's count is exact): so is their sum.
            return DeadLetters(now, groups, Count(sum(g.count for g in groups)))

        return await self._budgeted(budget_ms, "dead", read)

    async def job_duplicate(self, *, job_id: str) -> JobSummary | None:
        async def read(conn: Conn) -> JobSummary | None:
            row = await self._row(Q.job_duplicate, {"id": job_id}, conn=conn)
            return summary_row(row) if row else None

        return await self._budgeted(None, "show", read)

    async def role_may_act(self) -> str | None:
        r = await self._row(Q.role_may_act, {})
        assert r is not None  # one row, always
        if r["standby"]:
            return "this database is a hot standby, which takes no writes: act on the primary"
        if not r["writer"]:
            return f"role {r['role']!r} may read jobs but not change them: GRANT jobs_writer TO {r['role']}"
        return None

    async def queue_get(self, *, queue: str) -> QueuePause:
        async def read(conn: Conn) -> QueuePause:
            return pause_row(queue, await self._row(Q.queue_get, {"queue": queue}, conn=conn))

        return await self._budgeted(None, "queues", read)

    async def limit_state(self, *, keys: Sequence[str], now: datetime) -> list[LimitState]:
        from engine.projections import LimitState, SlotHolder

        async def read(conn: Conn) -> list[LimitState]:
            slots: dict[str, list[SlotHolder]] = defaultdict(list)
            for r in await self._rows(Q.limit_slots, {"keys": list(keys)}, conn=conn):
                slots[r["key"]].append(
                    SlotHolder(
                        None if r["job_id"] is None else str(r["job_id"]),
                        r["worker"],
                        r["lease_until"],
                        None if r["job_state"] is None else JobState(r["job_state"]),
                        r["started_at"],
                    )
                )
            buckets = {r["key"]: r for r in await self._rows(Q.limit_buckets, {"keys": list(keys)}, conn=conn)}
            out = []
            for key in keys:
                b = buckets.get(key)
                if key in slots or b is not None:
                    out.append(
                        LimitState(
                            key, tuple(slots.get(key, ())), b["tokens"] if b else None, b["refilled_at"] if b else None
                        )
                    )
            return out

        return await self._budgeted(None, "why", read)

    async def queue_waits(self, *, queue: str, now: datetime, budget_ms: int | None) -> list[WaitGroup]:
        from engine.projections import WaitGroup

        async def read(conn: Conn) -> list[WaitGroup]:
            rows = await self._rows(Q.queue_waits, {"queue": queue, "now": now}, conn=conn)
            return [WaitGroup(JobState(r["state"]), r["kind"], r["key"], r["n"], r["next_at"]) for r in rows]

        return await self._budgeted(budget_ms, "why", read)
