"""PostgresDriver's operator actions: each runs named statements of sql/queries/actions.sql.

A retry can race a concurrent enqueue of the same key: the partial unique index then refuses
the update (the statement changes nothing), and the action is asked again, so it answers the
live holder instead of an error.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg

from engine.drivers.jobfilter import id_range
from engine.drivers.postgres.introspect import Conn, PostgresIntrospect, filter_params, summary_row
from engine.drivers.sqlfiles import Q
from engine.projections import (
    ActionResult,
    BulkAction,
    BulkBatch,
    BulkGroup,
    BulkPlan,
    DrainRequest,
    JobFilter,
    JobSummary,
    QueuePause,
)
from engine.types import JobState

_BULK = {
    "retry": Q.job_bulk_retry,
    "cancel": Q.job_bulk_cancel,
    "discard": Q.job_bulk_discard,
}

_RACE_RETRIES = 3


class PostgresActions(PostgresIntrospect):
    async def job_retry_dead(
        self, *, job_id: str, tenant: str | None, now: datetime, actor: str | None, note: str | None = None
    ) -> ActionResult | None:
        p = {"id": job_id, "tenant": tenant, "now": now, "actor": actor, "note": note}
        for _ in range(_RACE_RETRIES):
            try:
                rows = await self._budgeted(None, "retry", lambda c: self._rows(c, Q.job_retry_dead.text, p))
                break
            except psycopg.errors.UniqueViolation:
                continue  # a live holder of the key committed meanwhile: the next read names it
        else:
            rows = []
        if not rows:
            return None
        r = rows[0]
        prev = JobState(r["previous"])
        if r["changed"]:
            return ActionResult("retry", job_id, True, prev, JobState.READY)
        if r["holder_id"] is not None:
            holder = str(r["holder_id"])
            return ActionResult(
                "retry",
                job_id,
                False,
                prev,
                prev,
                reason=f"live job {holder} holds its idempotency key",
                duplicate_of=holder,
            )
        return ActionResult("retry", job_id, False, prev, prev, reason=f"the job is {prev.value}, not dead")

    async def job_bulk_plan(
        self, *, action: BulkAction, where: JobFilter, now: datetime, budget_ms: int | None
    ) -> BulkPlan:
        p = filter_params(where) | {"action": action}

        async def read(conn: Conn) -> BulkPlan:
            rows = await self._rows(conn, Q.job_bulk_groups.text, p)
            groups = tuple(BulkGroup(r["stop_reason"], r["error_code"], r["tenant"], r["n"]) for r in rows)
            matched = sum(g.count for g in groups)
            deduped = 0
            if action == "retry" and matched:
                free = (await self._rows(conn, Q.job_bulk_free_keys.text, p))[0]["n"]
                deduped = matched - free
            return BulkPlan(action, where, matched, groups, deduped, now)

        return await self._budgeted(budget_ms, f"{action} --all", read)

    async def job_bulk_apply(
        self,
        *,
        action: BulkAction,
        where: JobFilter,
        now: datetime,
        actor: str | None,
        note: str | None,
        label: str,
        limit: int,
        before: str | None,
    ) -> BulkBatch:
        p: dict[str, Any] = filter_params(where) | {
            "now": now,
            "actor": actor,
            "note": note,
            "label": label,
            "limit": limit,
            "before": before,
        }
        sql = _BULK[action].text
        for attempt in range(_RACE_RETRIES):
            try:
                rows = await self._budgeted(None, f"{action} --all", lambda c: self._rows(c, sql, p))
                break
            except psycopg.errors.UniqueViolation:
                if attempt == _RACE_RETRIES - 1:
                    raise
        r = rows[0]
        changed = tuple(r["changed"] or ())
        return BulkBatch(
            changed, r["scanned"] - len(changed), r["scanned"], None if r["last_id"] is None else str(r["last_id"])
        )

    async def queue_pause(
        self, *, queue: str, paused: bool, actor: str | None, note: str | None, now: datetime
    ) -> QueuePause:
        from engine.drivers.postgres.introspect import pause_row

        p = {"queue": queue, "paused": paused, "actor": actor, "note": note, "now": now}
        rows = await self._budgeted(None, "pause", lambda c: self._rows(c, Q.queue_pause_set.text, p))
        if not rows:
            return QueuePause(queue, False, changed=False)
        return pause_row(queue, rows[0], changed=bool(rows[0]["changed"]))

    async def queue_names_known(self) -> list[str]:
        rows = await self._budgeted(None, "pause", lambda c: self._rows(c, Q.queue_names_known.text, {}))
        return [r["name"] for r in rows]

    async def job_find(
        self, *, fragment: str, tenant: str | None, limit: int, budget_ms: int | None
    ) -> list[JobSummary]:
        span = id_range(fragment)
        if span is None:
            return []
        lo, hi = span

        odd = len(fragment) % 2
        tail = {"tail": bytes.fromhex(fragment[odd:]), "nibble": int(fragment[0], 16) if odd else None}

        async def read(conn: Conn) -> list[JobSummary]:
            p: dict[str, Any] = {"lo": lo, "hi": hi, "tenant": tenant, "limit": limit}
            rows = await self._rows(conn, Q.job_find_prefix.text, p)
            if not rows:
                rows = await self._rows(conn, Q.job_find_suffix.text, p | tail)
            return [summary_row(r) for r in rows]

        return await self._budgeted(budget_ms, "show", read)

    async def job_discard(
        self, *, job_id: str, tenant: str | None, now: datetime, actor: str | None, note: str | None = None
    ) -> ActionResult | None:
        p = {"id": job_id, "tenant": tenant, "now": now, "actor": actor, "note": note}
        rows = await self._budgeted(None, "discard", lambda c: self._rows(c, Q.job_discard.text, p))
        if not rows:
            return None
        prev = JobState(rows[0]["previous"])
        if rows[0]["changed"]:
            return ActionResult(
                "discard", job_id, True, prev, prev, reason="deleted; a discarded entry keeps the audit"
            )
        return ActionResult("discard", job_id, False, prev, prev, reason=f"the job is {prev.value}, not dead")

    async def worker_drain_request(
        self, *, id: str, actor: str | None, note: str | None, now: datetime
    ) -> DrainRequest | None:
        p = {"id": id, "actor": actor, "note": note, "now": now}
        rows = await self._budgeted(None, "workers drain", lambda c: self._rows(c, Q.worker_drain_request.text, p))
        if not rows:
            return None
        r = rows[0]
        return DrainRequest(
            r["id"], r["drain_requested_by"], r["drain_requested_at"], r["drain_note"], bool(r["changed"])
        )
