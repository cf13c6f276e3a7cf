"""MemoryDriver's backfill ledger: the same meaning as sql/queries/backfills.sql (I22), a pass's
ledger row and its resume each with their audit entry (backfill.start, backfill.retry) under the
lock of the change, as the Postgres driver writes them in its transaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from engine.drivers.memory.state import LIVE, MemoryBase, dedupe_key, ready_again
from engine.projections import ActionResult
from engine.records import AuditEntry, BackfillRun, BackfillStatus, HistoryEntry, LivePass, backfill_started
from engine.types import Claim, JobState


def _newest_first(run: BackfillRun) -> tuple[datetime, str]:
    return (run.started_at, run.id)


class MemoryBackfills(MemoryBase):
    async def backfill_open(self, *, run: BackfillRun) -> bool:
        with self.state.lock:
            if run.id in self.state.backfills:
                return False
            self.state.backfills[run.id] = replace(run, status="queued")
            self.state.add_audit(backfill_started(run))
            return True

    async def backfill_begin(self, *, run_id: str, planned: int | None, now: datetime) -> bool:
        with self.state.lock:
            run = self.state.backfills.get(run_id)
            if run is None or run.status == "completed":
                return False
            self.state.backfills[run_id] = replace(
                run,
                status="running",
                planned=run.planned if run.planned is not None else planned,
                error=None,
                finished_at=None,
                resumed_at=now,
                resumed_swept=run.swept,
            )
            return True

    async def backfill_progress(self, *, run_id: str, claim: Claim, swept: int, batches: int) -> bool:
        with self.state.lock:
            run = self.state.backfills.get(run_id)
            job = self.state.jobs.get(claim.job_id)
            held = (
                job is not None
                and job.state is JobState.RUNNING
                and job.claimed_by == claim.worker
                and job.run == claim.run
            )
            if run is None or run.status != "running" or not held:
                return False
            self.state.backfills[run_id] = replace(run, swept=swept, batches=batches)
            return True

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
        with self.state.lock:
            run = self.state.backfills.get(run_id)
            if run is None or run.status == "completed":
                return False
            self.state.backfills[run_id] = replace(
                run,
                status=outcome,
                finished_at=now,
                error=run.error if error is None else error,
                swept=run.swept if swept is None else swept,
                batches=run.batches if batches is None else batches,
            )
            return True

    async def backfill_runs(
        self, *, names: Sequence[str] | None, environment: str | None, limit: int
    ) -> list[BackfillRun]:
        with self.state.lock:
            runs = [
                r
                for r in self.state.backfills.values()
                if (names is None or r.name in names) and (environment is None or r.environment == environment)
            ]
        return sorted(runs, key=_newest_first, reverse=True)[:limit]

    async def backfill_applied(self, *, environment: str) -> list[BackfillRun]:
        latest: dict[str, BackfillRun] = {}
        with self.state.lock:
            for r in self.state.backfills.values():
                if r.environment != environment or r.status != "completed" or r.dry_run:
                    continue
                best = latest.get(r.name)
                if best is None or (r.finished_at, r.id) > (best.finished_at, best.id):  # type: ignore[operator]
                    latest[r.name] = r
        return [latest[n] for n in sorted(latest)]

    async def backfill_live(self, *, job_names: Sequence[str]) -> list[LivePass]:
        with self.state.lock:
            live = [
                LivePass(j.id, j.name, j.state)
                for j in self.state.jobs.values()
                if j.name in job_names and j.state in LIVE
            ]
        return sorted(live, key=lambda p: (p.job_name, p.job_id))

    async def backfill_pass_resume(
        self, *, job_id: str, now: datetime, actor: str | None, note: str | None
    ) -> ActionResult | None:
        with self.state.lock:
            row = self.state.jobs.get(job_id)
            if row is None:
                return None
            prev = row.state
            holder = self.state.live_keys.get(dedupe_key(row.name, row.tenant, row.idempotency_key))
            if holder is not None and holder != job_id:
                return ActionResult(
                    "retry", job_id, False, prev, prev, reason=f"live pass {holder} holds its key", duplicate_of=holder
                )
            if prev not in (JobState.DEAD, JobState.CANCELLED):
                return ActionResult(
                    "retry", job_id, False, prev, prev, reason=f"the pass is {prev.value}, not dead or cancelled"
                )
            self.state.put(ready_again(row, now))
            self.state.add_history(HistoryEntry(job_id, now, "retried", actor, note, {"from": prev.value}))
            detail: dict[str, Any] = {"job_id": job_id, "from": prev.value}
            ledger = [r for r in self.state.backfills.values() if r.job_id == job_id]
            run = max(ledger, key=_newest_first) if ledger else None
            if run is not None:  # its ledger row: the pass it continues
                detail |= {"pass": run.id, "environment": run.environment, "write": not run.dry_run}
            target = row.name if run is None else run.name  # no ledger row names the job: its pass job's name
            self.state.add_audit(AuditEntry(now, actor, "backfill.retry", target, note=note, detail=detail))
        self._wake([row.queue])  # the statement's pg_notify: the pass made ready wakes its queue
        return ActionResult("retry", job_id, True, prev, JobState.READY)
