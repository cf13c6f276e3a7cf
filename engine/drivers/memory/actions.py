"""MemoryDriver's operator actions: the same meaning as sql/queries/actions.sql.

Every change is conditional on the state the action applies to (a retry only moves a row that is
still dead, a cancel only a live one), and each writes its entry in the job's history and, for a
single job or a worker, its audit log entry, under the same lock (a bulk's batches write none: the
Operator adds the run's one entry as it ends).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from datetime import datetime

from engine.drivers.dedupe import dedupe_key
from engine.drivers.memory.introspect import matches, summary
from engine.drivers.memory.state import LIVE, MemoryBase, Pause, ready_again
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
from engine.records import AuditEntry, HistoryEntry, job_entry
from engine.types import JobRow, JobState, waited_out


def _eligible(row: JobRow, action: BulkAction) -> bool:
    return row.state in LIVE if action == "cancel" else row.state is JobState.DEAD


def _read_by(row: JobRow, action: BulkAction, upto: datetime | None, where: JobFilter) -> bool:
    """Whether a dry run at ``upto`` could have counted ``row``: created by then (a cancel's live
    row; unchanged since, too, when ``where`` reads a field a live row changes), settled by then
    (a retry's or a discard's dead one)."""
    if upto is None:
        return True
    if action != "cancel":
        return row.finished_at is not None and row.finished_at <= upto
    return row.created_at <= upto and (not where.reads_what_changes() or row.updated_at <= upto)


def _discarded(row: JobRow, data: dict[str, object]) -> dict[str, object]:
    """The `discarded` entry's data: what the job was (as job_discard builds it in SQL)."""
    return {
        "from": "dead",
        **data,
        "name": row.name,
        "queue": row.queue,
        "tenant": row.tenant,
        "error_code": row.error_code,
        "stop_reason": row.stop_reason,
        "attempt": row.attempt,
        "max_attempts": row.max_attempts,
    }


class MemoryActions(MemoryBase):
    def _revive(self, row: JobRow, now: datetime, actor: str | None, note: str | None, data: dict[str, object]) -> None:
        # Attempts reset: an operator's retry is a fresh chance, not the n+1th failure.
        self.state.put(ready_again(row, now))
        self.state.add_history(HistoryEntry(row.id, now, "retried", actor, note, {"from": "dead", **data}))

    async def job_retry_dead(
        self, *, job_id: str, tenant: str | None, now: datetime, actor: str | None, note: str | None = None
    ) -> ActionResult | None:
        with self.state.lock:
            row = self.state.jobs.get(job_id)
            if row is None or (tenant is not None and row.tenant != tenant):
                return None
            if row.state is not JobState.DEAD:
                return ActionResult(
                    "retry", job_id, False, row.state, row.state, reason=f"the job is {row.state.value}, not dead"
                )
            holder = self.state.live_holder(row)
            if holder is not None:
                return ActionResult(
                    "retry",
                    job_id,
                    False,
                    row.state,
                    row.state,
                    reason=f"live job {holder} holds its idempotency key",
                    duplicate_of=holder,
                )
            self._revive(row, now, actor, note, {})
            self.state.add_audit(
                job_entry(
                    now, actor, "job.retry", job_id, name=row.name, queue=row.queue, tenant=row.tenant, note=note,
                    was="dead",
                )
            )  # fmt: skip
        self._wake([row.queue])  # the statement's pg_notify: a job made ready wakes its queue
        return ActionResult("retry", job_id, True, JobState.DEAD, JobState.READY)

    async def queue_pause(
        self, *, queue: str, paused: bool, actor: str | None, note: str | None, now: datetime
    ) -> QueuePause:
        with self.state.lock:
            self.state.queues.add(queue)
            cur = self.state.paused.get(queue)
            if paused:
                if cur is not None:
                    return QueuePause(queue, True, cur.by, cur.at, cur.note, changed=False)
                self.state.paused[queue] = Pause(actor, now, note)
                self.state.add_audit(AuditEntry(now, actor, "queue.pause", queue, note=note))
                return QueuePause(queue, True, actor, now, note)
            self.state.queues.discard(queue)  # as queue_pause_set: a resume deletes the row
            if cur is None:
                return QueuePause(queue, False, changed=False)
            del self.state.paused[queue]
            self.state.add_audit(AuditEntry(now, actor, "queue.resume", queue, note=note))
        self._wake([queue])  # the statement's pg_notify: a resumed queue's ready jobs wake its workers
        return QueuePause(queue, False, actor, now, note)

    async def job_bulk_plan(
        self, *, action: BulkAction, where: JobFilter, now: datetime, budget_ms: int | None
    ) -> BulkPlan:
        with self.state.lock:
            rows = [r for r in self.state.jobs.values() if _eligible(r, action) and matches(r, where)]
            deduped = 0
            if action == "retry":
                keys = Counter(dedupe_key(r.name, r.tenant, r.idempotency_key) for r in rows)
                # Of each key only one row can go live, and none where a live row holds it already.
                free = sum(1 for k in keys if k not in self.state.live_keys)
                deduped = len(rows) - free
            replayed = sorted((r.id for r in rows if action == "retry" and self._replays(r.id)), reverse=True)
        groups = Counter((r.stop_reason, r.error_code, r.tenant) for r in rows)
        # The statement's order: the largest first, then stop reason, code and tenant, a missing one last.
        order = sorted(groups.items(), key=lambda kv: (-kv[1], *((v is None, v or "") for v in kv[0])))
        return BulkPlan(
            action,
            where,
            len(rows),
            tuple(BulkGroup(s, c, t, n) for (s, c, t), n in order),
            deduped,
            now,
            len(replayed),
            replayed[0] if replayed else None,
        )

    def _replays(self, job_id: str) -> bool:
        """Whether a job stored a wait for jobs that timed out or answered one of them not
        completed (as job_bulk_replays reads it)."""
        return any(
            waited_out(s)
            or s.kind == "jobs"
            and isinstance(s.result, list)
            and any(isinstance(o, dict) and o.get("state") not in (None, "completed") for o in s.result)
            for s in self.state.steps.get(job_id, {}).values()
        )

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
        with self.state.lock:
            rows = sorted(
                (
                    r
                    for r in self.state.jobs.values()
                    if (before is None or r.id < before)
                    and _eligible(r, action)
                    and _read_by(r, action, upto, where)
                    and matches(r, where)
                ),
                key=lambda r: r.id,
                reverse=True,
            )[:limit]
            changed: list[str] = []
            woken: set[str] = set()
            for r in rows:
                if action == "retry":
                    if dedupe_key(r.name, r.tenant, r.idempotency_key) in self.state.live_keys:
                        continue
                    self._revive(r, now, actor, note, {"bulk": label})
                    woken.add(r.queue)
                elif action == "discard":
                    self._discard(r, now, actor, note, {"bulk": label})
                else:
                    self.state.put(
                        replace(r, state=JobState.CANCELLED, finished_at=now, updated_at=now, lease_until=None)
                    )
                    self.state.add_history(
                        HistoryEntry(r.id, now, "cancelled", actor, note, {"from": r.state.value, "bulk": label})
                    )
                changed.append(r.id)
        self._wake(woken)  # a bulk retry's pg_notify, once a queue
        return BulkBatch(tuple(changed), len(rows) - len(changed), len(rows), rows[-1].id if rows else None)

    def _discard(
        self, row: JobRow, now: datetime, actor: str | None, note: str | None, data: dict[str, object]
    ) -> None:
        # As job_discard in SQL: the row, its attempts and steps go; its history becomes one entry.
        del self.state.jobs[row.id]
        self.state.attempts.pop(row.id, None)
        self.state.steps.pop(row.id, None)
        self.state.history[row.id] = [HistoryEntry(row.id, now, "discarded", actor, note, _discarded(row, data))]

    async def job_discard(
        self, *, job_id: str, tenant: str | None, now: datetime, actor: str | None, note: str | None = None
    ) -> ActionResult | None:
        with self.state.lock:
            row = self.state.jobs.get(job_id)
            if row is None or (tenant is not None and row.tenant != tenant):
                return None
            if row.state is not JobState.DEAD:
                return ActionResult(
                    "discard", job_id, False, row.state, row.state, reason=f"the job is {row.state.value}, not dead"
                )
            self._discard(row, now, actor, note, {})
            said = {"error_code": row.error_code, "stop_reason": row.stop_reason}
            self.state.add_audit(
                job_entry(
                    now, actor, "job.discard", job_id, name=row.name, queue=row.queue, tenant=row.tenant, note=note,
                    was="dead", **said,
                )
            )  # fmt: skip
            return ActionResult(
                "discard", job_id, True, row.state, row.state, reason="deleted; a discarded entry keeps the audit"
            )

    async def queue_names_known(self) -> list[str]:
        with self.state.lock:
            names = {r.queue for r in self.state.jobs.values()} | self.state.queues | set(self.state.paused)
            names |= {q for w in self.state.workers.values() for q in w.queues}
        return sorted(names)

    async def job_find(
        self, *, fragment: str, tenant: str | None, limit: int, budget_ms: int | None
    ) -> list[JobSummary]:
        with self.state.lock:
            mine = [r for r in self.state.jobs.values() if tenant is None or r.tenant == tenant]
            hits = [r for r in mine if r.id.replace("-", "").startswith(fragment)]
            if not hits:  # as job_find_suffix: the tail only when no id begins with it
                hits = [r for r in mine if r.id.replace("-", "").endswith(fragment)]
            return [summary(r) for r in sorted(hits, key=lambda r: r.id)[:limit]]

    async def worker_drain_request(
        self, *, id: str, actor: str | None, note: str | None, now: datetime
    ) -> DrainRequest | None:
        with self.state.lock:
            workers = self.state.workers
            w = workers.get(id)
            if w is None:
                return None
            notes = self.state.drain_notes
            if w.drain_requested_at is not None:
                return DrainRequest(id, w.drain_requested_by, w.drain_requested_at, notes.get(id), changed=False)
            workers[id] = replace(w, drain_requested_by=actor, drain_requested_at=now)
            notes[id] = note
            self.state.add_audit(AuditEntry(now, actor, "worker.drain", id, note=note))
            return DrainRequest(id, actor, now, note)
