"""MemoryDriver's step store and events: the same semantics as sql/queries/steps.sql."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from engine.codec import check_json, dumps
from engine.drivers.memory.inserts import insert_jobs
from engine.drivers.memory.state import MemoryBase, ready_again
from engine.records import EnqueuedBy, EventRecord, HistoryEntry, SentEvent, StepRecord, StepRetry, job_entry
from engine.types import Claim, EnqueueResult, JobState, NewJob, StoredStep

_RETRYABLE = (JobState.DEAD, JobState.COMPLETED)


def jsonb_contains(value: Any, pattern: Any) -> bool:
    """jsonb's ``value @> pattern``: objects by key (recursively), arrays by element, scalars equal.

    A boolean is never a number here, as in jsonb (Python would say True == 1).
    """
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(k in value and jsonb_contains(value[k], v) for k, v in pattern.items())
    if isinstance(pattern, list):
        if not isinstance(value, list):
            return False
        return all(any(jsonb_contains(v, p) for v in value) for p in pattern)
    if isinstance(value, (dict, list)):
        return False
    if isinstance(pattern, bool) or isinstance(value, bool):
        return isinstance(pattern, bool) and isinstance(value, bool) and pattern is value
    return bool(value == pattern)


def _size(step: StoredStep) -> int | None:
    if step.status not in ("completed", "timed-out"):
        return None
    return len(dumps(step.result, what="step result").encode())


def event_sent_for(state: Any, row: Any, wait: dict[str, Any] | None, now: datetime) -> bool:
    """Whether an event the suspending event wait ``wait`` of ``row`` would take is there already
    (event_find's match): job_nack's last look before it suspends."""
    if not wait or wait.get("kind") != "event":
        return False
    taken = {s.event_id for s in state.steps_of(row.id).values() if s.event_id is not None}
    return any(
        e.name == wait.get("event")
        and e.tenant == row.tenant
        and jsonb_contains(e.payload, wait.get("match") or {})
        and row.created_at <= e.sent_at <= now
        and e.id not in taken
        for e in state.events
    )


class MemorySteps(MemoryBase):
    async def step_load(self, *, job_id: str) -> list[StoredStep]:
        with self.state.lock:
            return sorted(self.state.steps_of(job_id).values(), key=lambda s: (s.seq, s.name))

    async def step_save(self, *, claim: Claim, step: StoredStep) -> bool:
        with self.state.lock:
            if self.state.held(claim) is None:
                return False
            keeps = step.status in ("completed", "timed-out")
            self.state.steps_of(claim.job_id)[step.name] = replace(
                step,
                job_id=claim.job_id,
                run=claim.run,
                result=check_json(step.result, what="step result") if keeps else None,
                wait=None if step.wait is None else check_json(step.wait, what="step wait"),
            )
            return True

    async def step_enqueue(
        self, *, claim: Claim, step: StoredStep, jobs: Sequence[NewJob], now: datetime
    ) -> list[EnqueueResult] | None:
        with self.state.lock:  # one commit: the jobs and the step, or neither
            if self.state.held(claim) is None:
                return None
            out, fresh = insert_jobs(self.state, jobs, now)
            self.state.steps_of(claim.job_id)[step.name] = replace(
                step, job_id=claim.job_id, run=claim.run, result=[r.id for r in out], wait=None
            )
        self._wake(fresh)
        return out

    async def step_enqueued_by(self, *, job_id: str) -> list[EnqueuedBy]:
        with self.state.lock:
            found = [
                EnqueuedBy(s.job_id, s.name)
                for steps in self.state.steps.values()
                for s in steps.values()
                if s.kind == "enqueue" and job_id in (s.job_ids or ())
            ]
        return sorted(found, key=lambda e: e.job_id)[:5]

    async def step_list(self, *, job_id: str) -> list[StepRecord]:
        with self.state.lock:
            steps = sorted(self.state.steps_of(job_id).values(), key=lambda s: (s.seq, s.name))
        return [
            StepRecord(
                s.job_id,
                s.name,
                s.seq,
                s.kind,
                s.status,
                s.attempt,
                s.started_at,
                s.finished_at,
                None if s.finished_at is None else (s.finished_at - s.started_at).total_seconds(),
                s.error,
                _size(s),
            )
            for s in steps
        ]

    async def event_send(
        self, *, id: str, name: str, payload: dict[str, Any], tenant: str | None, actor: str | None, now: datetime
    ) -> SentEvent:
        ev = EventRecord(id, name, tenant, check_json(payload, what="event payload"), now, actor)
        woken: set[str] = set()  # their queues
        count = 0
        with self.state.lock:
            self.state.events.append(ev)
            for row in list(self.state.jobs.values()):
                w = row.wait or {}
                if (
                    row.state is JobState.SUSPENDED
                    and w.get("kind") == "event"
                    and w.get("event") == name
                    and row.tenant == tenant
                    and jsonb_contains(ev.payload, w.get("match") or {})
                    and row.created_at <= now
                    and row.run_at > now
                ):
                    self.state.put(replace(row, run_at=now, updated_at=now))
                    self.state.add_history(
                        HistoryEntry(row.id, now, "event", actor, None, {"event": name, "event_id": id})
                    )
                    woken.add(row.queue)
                    count += 1
        self._wake(woken)
        return SentEvent(id, name, tenant, now, count)

    async def event_find(
        self, *, job_id: str, name: str, tenant: str | None, match: dict[str, Any], since: datetime, now: datetime
    ) -> EventRecord | None:
        with self.state.lock:
            taken = {s.event_id for s in self.state.steps_of(job_id).values() if s.event_id is not None}
            hits = [
                e
                for e in self.state.events
                if e.name == name
                and e.tenant == tenant
                and jsonb_contains(e.payload, match)
                and since <= e.sent_at <= now
                and e.id not in taken
            ]
        return min(hits, key=lambda e: (e.sent_at, e.id)) if hits else None

    async def job_retry_from_step(
        self,
        *,
        job_id: str,
        step_name: str,
        tenant: str | None,
        now: datetime,
        actor: str | None,
        note: str | None = None,
    ) -> StepRetry:
        with self.state.lock:
            row = self.state.jobs.get(job_id)
            if row is None or (tenant is not None and row.tenant != tenant):
                return StepRetry(job_id, "not-found")
            if row.state not in _RETRYABLE:
                return StepRetry(job_id, "invalid-state", row.state, step_name)
            steps = self.state.steps_of(job_id)
            target = steps.get(step_name)
            if target is None:
                known = tuple(s.name for s in sorted(steps.values(), key=lambda s: (s.seq, s.name)))
                return StepRetry(job_id, "unknown-step", row.state, step_name, known_steps=known)
            holder = self.state.live_holder(row)
            if holder is not None:
                return StepRetry(job_id, "duplicate", row.state, step_name, holder_id=holder)
            dropped = sorted((s for s in steps.values() if s.seq >= target.seq), key=lambda s: (s.seq, s.name))
            for s in dropped:
                del steps[s.name]
            discarded = tuple(s.name for s in dropped)
            self.state.put(ready_again(row, now))
            data = {"step": step_name, "from": row.state.value, "discarded": list(discarded)}
            self.state.add_history(HistoryEntry(job_id, now, "retried-from-step", actor, note, data))
            said = job_entry(
                now, actor, "job.retry_from_step", job_id, name=row.name, queue=row.queue, tenant=row.tenant,
                note=note, was=row.state.value, step=step_name, discarded=list(discarded),
            )  # fmt: skip
            self.state.add_audit(said)
        self._wake([row.queue])
        return StepRetry(job_id, "retried", row.state, step_name, discarded=discarded)
