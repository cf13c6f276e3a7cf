"""MemoryDriver's core queue: the same semantics as sql/queries/jobs.sql, on the injected clock."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from engine.codec import check_json
from engine.drivers.memory.inserts import insert_jobs
from engine.drivers.memory.state import LIVE, MemoryBase
from engine.drivers.memory.steps import event_sent_for
from engine.records import AttemptRecord, CancelResult, HistoryEntry, job_entry
from engine.types import Ack, Claim, EnqueueResult, JobRow, JobState, Nack, NewJob, Renewal

_NACK_STATE = {"dead": JobState.DEAD, "park": JobState.PARKED, "suspend": JobState.SUSPENDED}
_ATTEMPT_OUTCOME = {"retry": "retried", "dead": "dead", "park": "parked", "suspend": "suspended", "release": "released"}


class MemoryJobs(MemoryBase):
    async def job_enqueue(self, *, jobs: Sequence[NewJob], now: datetime) -> list[EnqueueResult]:
        out, fresh = insert_jobs(self.state, jobs, now)
        self._wake(fresh)  # the statement's pg_notify for the queues it inserted into
        return out

    async def job_enqueue_chunks(self, *, chunks: Iterable[Sequence[NewJob]], now: datetime) -> list[EnqueueResult]:
        # Every chunk is built before any row is written: one that raises leaves nothing behind.
        rows = [j for chunk in chunks for j in chunk]
        return await self.job_enqueue(jobs=rows, now=now)

    def _record(
        self,
        row: JobRow,
        now: datetime,
        outcome: str,
        *,
        attempt: int,
        code: str | None = None,
        error: str | None = None,
        traceback: str | None = None,
        fix: str | None = None,
    ) -> None:
        assert row.claimed_by is not None and row.claimed_at is not None
        self.state.record_attempt(
            AttemptRecord(
                row.id, row.run, attempt, row.claimed_by, row.claimed_at, now, outcome, code, error, traceback, fix
            )
        )

    async def job_ack_many(self, *, acks: Sequence[Ack], now: datetime) -> list[str]:
        done: list[str] = []
        with self.state.lock:
            for ack in acks:
                row = self.state.held(ack.claim)
                if row is None:
                    continue
                self.state.put(
                    replace(
                        row,
                        state=JobState.COMPLETED,
                        result=check_json(ack.result, what="result"),
                        finished_at=now,
                        updated_at=now,
                        lease_until=None,
                        wait=None,
                        waiting_since=None,
                    )
                )
                self._record(row, now, "completed", attempt=row.attempt)
                done.append(row.id)
        return done

    async def job_nack(self, *, nack: Nack, now: datetime) -> bool:
        with self.state.lock:
            row = self.state.held(nack.claim)
            if row is None:
                return False
            counts = nack.outcome in ("retry", "dead")
            if nack.outcome in ("retry", "release"):
                run_at = nack.run_at or now
                state = JobState.DELAYED if run_at > now else JobState.READY
            else:
                run_at = nack.run_at or row.run_at
                state = _NACK_STATE[nack.outcome]
                if state is JobState.SUSPENDED and event_sent_for(self.state, row, nack.wait, now):
                    run_at = now  # sent after the wait looked, before this suspension: claimable now
            self.state.put(
                replace(
                    row,
                    state=state,
                    run_at=run_at,
                    attempt=row.attempt if counts else row.attempt - 1,
                    last_error=nack.error if counts else row.last_error,
                    error_code=nack.error_code if counts else row.error_code,
                    stop_reason=nack.stop_reason,
                    wait=nack.wait,
                    # A shed keeps the first shed's: the row waits since it first fell due (I24).
                    waiting_since=(row.waiting_since or row.run_at) if state is JobState.PARKED else None,
                    finished_at=now if state is JobState.DEAD else None,
                    lease_until=None,
                    updated_at=now,
                )
            )
            self._record(
                row,
                now,
                _ATTEMPT_OUTCOME[nack.outcome],
                attempt=row.attempt,
                code=nack.error_code,
                error=nack.error,
                traceback=nack.traceback,
                fix=nack.fix,
            )
            return True

    async def job_renew_many(self, *, claims: Sequence[Claim], now: datetime, lease_seconds: float) -> list[Renewal]:
        out: list[Renewal] = []
        with self.state.lock:
            for c in claims:
                row = self.state.held(c)
                if row is not None:
                    until = now + timedelta(seconds=lease_seconds)
                    self.state.put(replace(row, lease_until=until))
                    out.append(Renewal(c, "ok", until))
                    continue
                cur = self.state.jobs.get(c.job_id)
                cancelled = (
                    cur is not None
                    and cur.state is JobState.CANCELLED
                    and cur.claimed_by == c.worker
                    and cur.run == c.run
                )
                out.append(Renewal(c, "cancelled" if cancelled else "lost"))
        return out

    async def job_cancel(
        self, *, job_id: str, tenant: str | None, now: datetime, actor: str | None, note: str | None = None
    ) -> CancelResult | None:
        with self.state.lock:
            row = self.state.jobs.get(job_id)
            if row is None or (tenant is not None and row.tenant != tenant):
                return None
            if row.state not in LIVE:
                return CancelResult(job_id, row.state, False)
            self.state.put(replace(row, state=JobState.CANCELLED, finished_at=now, updated_at=now, lease_until=None))
            self.state.add_history(HistoryEntry(job_id, now, "cancelled", actor, note, {"from": row.state.value}))
            said = job_entry(
                now, actor, "job.cancel", job_id, name=row.name, queue=row.queue, tenant=row.tenant, note=note,
                was=row.state.value,
            )  # fmt: skip
            self.state.add_audit(said)
            if row.state is JobState.RUNNING and row.claimed_by is not None and row.claimed_at is not None:
                self._record(row, now, "cancelled", attempt=row.attempt)  # the claim ran: its attempt ends here
            return CancelResult(job_id, row.state, True, was_running=row.state is JobState.RUNNING)

    async def job_get(self, *, job_id: str) -> JobRow | None:
        return self.state.jobs.get(job_id)

    async def job_get_many(self, *, job_ids: Sequence[str]) -> list[JobRow]:
        with self.state.lock:
            return [row for jid in dict.fromkeys(job_ids) if (row := self.state.jobs.get(jid)) is not None]

    async def job_awaited_by(self, *, job_id: str) -> list[JobRow]:
        with self.state.lock:
            waiting = [
                r
                for r in self.state.jobs.values()
                if r.state is JobState.SUSPENDED
                and (r.wait or {}).get("kind") == "jobs"
                and job_id in ((r.wait or {}).get("jobs") or ())
            ]
        return sorted(waiting, key=lambda r: r.id)[:20]

    async def job_history(self, *, job_id: str) -> list[HistoryEntry]:
        with self.state.lock:
            return list(self.state.history.get(job_id, []))

    async def job_attempts(self, *, job_id: str) -> list[AttemptRecord]:
        with self.state.lock:
            return list(self.state.attempts.get(job_id, []))
