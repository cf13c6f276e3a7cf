"""PostgresDriver's operator actions: each runs named statements of sql/queries/actions.sql.

An action on one job or a worker that changed something writes its audit log entry after its
statement, in its transaction (``_budgeted``): both land or neither does. A bulk's batches write
none: the Operator adds the run's one entry as it ends.

A retry can race a concurrent enqueue of the same key: the partial unique index then refuses
the update (the statement changes nothing), and the action is asked again, so it answers the
live holder instead of an error.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg

from engine.drivers.jobfilter import id_range
from engine.drivers.postgres.base import Conn, PostgresBase, Row
from engine.drivers.postgres.introspect import filter_params, pause_row, summary_row
from engine.drivers.sqlfiles import Q
from engine.drivers.transient import rolled_back
from engine.errors import ConnectionLost
from engine.types import JobState

if TYPE_CHECKING:  # each action imports the read models it builds: a worker process never loads them
    from engine.projections import (
        ActionResult,
        BulkAction,
        BulkBatch,
        BulkPlan,
        DrainRequest,
        JobFilter,
        JobSummary,
        QueuePause,
    )
    from engine.records import AuditEntry

_BULK = {
    "retry": Q.job_bulk_retry,
    "cancel": Q.job_bulk_cancel,
    "discard": Q.job_bulk_discard,
}

_RACE_RETRIES = 3


class PostgresActions(PostgresBase):
    async def job_retry_dead(
        self, *, job_id: str, tenant: str | None, now: datetime, actor: str | None, note: str | None = None
    ) -> ActionResult | None:
        from engine.projections import ActionResult
        from engine.records import job_entry

        p = {"id": job_id, "tenant": tenant, "now": now, "actor": actor, "note": note}

        def entry(r: Row) -> AuditEntry:
            return job_entry(
                now, actor, "job.retry", job_id, name=r["name"], queue=r["queue"], tenant=r["tenant"], note=note,
                was="dead",
            )  # fmt: skip

        for _ in range(_RACE_RETRIES):
            try:
                r = await self._budgeted(None, "retry", lambda c: self._audited(c, Q.job_retry_dead, p, entry))
                break
            except psycopg.errors.UniqueViolation:
                continue  # a live holder of the key committed meanwhile: the next read names it
        else:
            r = None
        if r is None:
            return None
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
        from engine.projections import BulkGroup, BulkPlan

        p = filter_params(where) | {"action": action}

        async def read(conn: Conn) -> BulkPlan:
            rows = await self._rows(Q.job_bulk_groups, p, conn=conn)
            groups = tuple(BulkGroup(r["stop_reason"], r["error_code"], r["tenant"], r["n"]) for r in rows)
            matched = sum(g.count for g in groups)
            deduped = replays = 0
            newest = None
            if action == "retry" and matched:
                keys = await self._row(Q.job_bulk_free_keys, p, conn=conn)
                free = keys["n"] if keys else 0
                deduped = matched - free
                r = await self._row(Q.job_bulk_replays, p, conn=conn)
                replays, newest = (r["n"], r["newest"]) if r else (0, None)
            return BulkPlan(action, where, matched, groups, deduped, now, replays, newest)

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
        upto: datetime | None = None,
    ) -> BulkBatch:
        from engine.projections import BulkBatch

        p: dict[str, Any] = filter_params(where) | {
            "now": now,
            "actor": actor,
            "note": note,
            "label": label,
            "limit": limit,
            "before": before,
            "upto": upto,
            "unchanged_since": upto if where.reads_what_changes() else None,  # read by the cancel's batch
        }
        query = _BULK[action]
        for attempt in range(_RACE_RETRIES):
            try:
                r = await self._budgeted(None, f"{action} --all", lambda c: self._row(query, p, conn=c))
                break
            except psycopg.errors.UniqueViolation:
                if attempt == _RACE_RETRIES - 1:
                    raise
            except ConnectionLost as lost:
                # A batch's dead rows take their groups' counts in row order, so two statements
                # over the same groups (another bulk action, the pruner) can wait on each other:
                # PostgreSQL rolls one back whole (a deadlock, sqlstate class 40), and that batch
                # runs again. A lost connection is the caller's to retry.
                if not rolled_back(lost.__cause__) or attempt == _RACE_RETRIES - 1:
                    raise
        assert r is not None  # the batch's one summary row
        changed = tuple(r["changed"] or ())
        return BulkBatch(
            changed, r["scanned"] - len(changed), r["scanned"], None if r["last_id"] is None else str(r["last_id"])
        )

    async def queue_pause(
        self, *, queue: str, paused: bool, actor: str | None, note: str | None, now: datetime
    ) -> QueuePause:
        from engine.projections import QueuePause
        from engine.records import AuditEntry

        p = {"queue": queue, "paused": paused, "actor": actor, "note": note, "now": now}
        said = AuditEntry(now, actor, "queue.pause" if paused else "queue.resume", queue, note=note)
        r = await self._budgeted(None, "pause", lambda c: self._audited(c, Q.queue_pause_set, p, lambda _: said))
        if r is None:
            return QueuePause(queue, False, changed=False)
        return pause_row(queue, r, changed=bool(r["changed"]))

    async def queue_names_known(self) -> list[str]:
        rows = await self._budgeted(None, "pause", lambda c: self._rows(Q.queue_names_known, {}, conn=c))
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
            rows = await self._rows(Q.job_find_prefix, p, conn=conn)
            if not rows:
                rows = await self._rows(Q.job_find_suffix, p | tail, conn=conn)
            return [summary_row(r) for r in rows]

        return await self._budgeted(budget_ms, "show", read)

    async def job_discard(
        self, *, job_id: str, tenant: str | None, now: datetime, actor: str | None, note: str | None = None
    ) -> ActionResult | None:
        from engine.projections import ActionResult
        from engine.records import job_entry

        p = {"id": job_id, "tenant": tenant, "now": now, "actor": actor, "note": note}

        def entry(r: Row) -> AuditEntry:
            return job_entry(
                now, actor, "job.discard", job_id, name=r["name"], queue=r["queue"], tenant=r["tenant"], note=note,
                was="dead", error_code=r["error_code"], stop_reason=r["stop_reason"],
            )  # fmt: skip

        r = await self._budgeted(None, "discard", lambda c: self._audited(c, Q.job_discard, p, entry))
        if r is None:
            return None
        prev = JobState(r["previous"])
        if r["changed"]:
            return ActionResult(
                "discard", job_id, True, prev, prev, reason="deleted; a discarded entry keeps the audit"
            )
        return ActionResult("discard", job_id, False, prev, prev, reason=f"the job is {prev.value}, not dead")

    async def worker_drain_request(
        self, *, id: str, actor: str | None, note: str | None, now: datetime
    ) -> DrainRequest | None:
        from engine.projections import DrainRequest
        from engine.records import AuditEntry

        p = {"id": id, "actor": actor, "note": note, "now": now}
        said = AuditEntry(now, actor, "worker.drain", id, note=note)
        r = await self._budgeted(
            None, "workers drain", lambda c: self._audited(c, Q.worker_drain_request, p, lambda _: said)
        )
        if r is None:
            return None
        return DrainRequest(
            r["id"], r["drain_requested_by"], r["drain_requested_at"], r["drain_note"], bool(r["changed"])
        )
