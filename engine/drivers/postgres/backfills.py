"""PostgresDriver's backfill ledger: jobs.backfill through sql/queries/backfills.sql (I22).

A pass's ledger row and its resume each write their audit entry (backfill.start, backfill.retry)
in the transaction of the change, and only when it changed something."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from engine.drivers.postgres.base import Conn, PostgresBase
from engine.drivers.sqlfiles import Q, Query
from engine.types import Claim, JobState

if TYPE_CHECKING:  # the read models and records named in annotations only: a worker never loads them
    from engine.projections import ActionResult
    from engine.records import BackfillRun, BackfillStatus, LivePass


def _run(r: Any) -> BackfillRun:
    from engine.records import BackfillRun

    return BackfillRun(
        id=str(r["id"]),
        name=r["name"],
        environment=r["environment"],
        job_id=None if r["job_id"] is None else str(r["job_id"]),
        status=r["status"],
        dry_run=r["dry_run"],
        forced=r["forced"],
        started_at=r["started_at"],
        app_version=r["app_version"],
        actor=r["actor"],
        finished_at=r["finished_at"],
        planned=None if r["planned"] is None else int(r["planned"]),
        swept=int(r["swept"]),
        batches=int(r["batches"]),
        error=r["error"],
        resumed_at=r["resumed_at"],
        resumed_swept=int(r["resumed_swept"]),
    )


class PostgresBackfills(PostgresBase):
    async def _bf(self, q: Query, params: dict[str, Any], conn: Conn | None = None) -> list[Any]:
        """``q``'s rows as a list, whatever its declared cardinality (on ``conn`` when given)."""
        answer = await self._run(q, params, conn=conn)
        if q.cardinality == "many":
            return list(answer)
        return [] if answer is None else [answer]

    async def backfill_open(self, *, run: BackfillRun) -> bool:
        p = {
            "id": run.id,
            "name": run.name,
            "environment": run.environment,
            "dry_run": run.dry_run,
            "forced": run.forced,
            "job_id": run.job_id,
            "app_version": run.app_version,
            "actor": run.actor,
            "now": run.started_at,
        }
        from engine.records import backfill_started

        async with self._connection() as conn, conn.transaction():  # the row and its audit entry
            rows = await self._bf(Q.backfill_open, p, conn)
            if rows:
                await self._audit(backfill_started(run), conn)
        return bool(rows)

    async def backfill_begin(self, *, run_id: str, planned: int | None, now: datetime) -> bool:
        return bool(await self._bf(Q.backfill_begin, {"id": run_id, "planned": planned, "now": now}))

    async def backfill_progress(self, *, run_id: str, claim: Claim, swept: int, batches: int) -> bool:
        p = {"id": run_id, "swept": swept, "batches": batches, "job_id": claim.job_id}
        return bool(await self._bf(Q.backfill_progress, p | {"worker": claim.worker, "run": claim.run}))

    async def backfill_finish(
        self,
        *,
        run_id: str,
        outcome: BackfillStatus,
        swept: int | None,
        batches: int | None,
        error: str | None,
        now: datetime,
    ) -> bool:
        p = {"id": run_id, "outcome": outcome, "swept": swept, "batches": batches, "error": error, "now": now}
        return bool(await self._bf(Q.backfill_finish, p))

    async def backfill_runs(
        self, *, names: Sequence[str] | None, environment: str | None, limit: int
    ) -> list[BackfillRun]:
        p = {"names": None if names is None else list(names), "environment": environment, "limit": limit}
        return [_run(r) for r in await self._bf(Q.backfill_runs, p)]

    async def backfill_applied(self, *, environment: str) -> list[BackfillRun]:
        return [_run(r) for r in await self._bf(Q.backfill_applied, {"environment": environment})]

    async def backfill_live(self, *, job_names: Sequence[str]) -> list[LivePass]:
        from engine.records import LivePass

        if not job_names:
            return []
        rows = await self._bf(Q.backfill_live, {"names": list(job_names)})
        return [LivePass(str(r["id"]), r["name"], JobState(r["state"])) for r in rows]

    async def backfill_pass_resume(
        self, *, job_id: str, now: datetime, actor: str | None, note: str | None
    ) -> ActionResult | None:
        from engine.projections import ActionResult
        from engine.records import AuditEntry

        async with self._connection() as conn, conn.transaction():  # the resume and its audit entry
            rows = await self._bf(
                Q.backfill_pass_resume, {"id": job_id, "now": now, "actor": actor, "note": note}, conn
            )
            if rows and rows[0]["changed"]:
                r = rows[0]
                detail: dict[str, Any] = {"job_id": job_id, "from": r["previous"]}
                if r["run_id"] is not None:  # its ledger row: the pass it continues
                    detail |= {"pass": str(r["run_id"]), "environment": r["environment"], "write": not r["dry_run"]}
                target = r["backfill"] or r["job_name"]  # no ledger row names the job: its pass job's name
                await self._audit(AuditEntry(now, actor, "backfill.retry", target, note=note, detail=detail), conn)
        if not rows:
            return None
        r = rows[0]
        prev = JobState(r["previous"])
        if r["changed"]:
            return ActionResult("retry", job_id, True, prev, JobState.READY)
        if r["holder_id"] is not None:
            holder = str(r["holder_id"])
            return ActionResult(
                "retry", job_id, False, prev, prev, reason=f"live pass {holder} holds its key", duplicate_of=holder
            )
        return ActionResult(
            "retry", job_id, False, prev, prev, reason=f"the pass is {prev.value}, not dead or cancelled"
        )
