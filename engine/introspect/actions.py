"""The Operator: the operator actions, fenced, tenant-aware (I25) and audited.

Each id-addressed action checks the id, applies only to the state it names (a retry moves a job
that is still dead; a cancel a live one) and is written to the job's history with who, when and
the incident note. ``read_only=True`` refuses every mutation with X_READ_ONLY; the dry run of a
bulk action is a read and stays allowed.
"""

from __future__ import annotations

from typing import Any

from engine.errors import (
    X_INVALID_ARGUMENT,
    X_INVALID_STATE,
    X_READ_ONLY,
    X_UNKNOWN_STEP,
    JobsError,
)
from engine.introspect.base import EngineView, load_job, not_found
from engine.introspect.filters import describe_filter, scoped
from engine.projections import (
    ActionResult,
    BulkAction,
    BulkPlan,
    BulkResult,
    EventSent,
    JobFilter,
    QueuePause,
)
from engine.types import LIVE_STATES, JobState

DEFAULT_BATCH = 500
DEFAULT_PLAN_BUDGET = 5.0  # seconds a bulk action's dry run may take
_ACTIONS = ("retry", "cancel")


class Operator(EngineView):
    """``Operator(engine, actor="alice")``: retry, retry_from_step, cancel, plan, bulk, pause,
    resume, send_event. ``tenant``: a scope every action is held to (I25)."""

    def __init__(
        self,
        engine: Any,
        *,
        actor: str,
        read_only: bool = False,
        tenant: str | None = None,
        budget: float = DEFAULT_PLAN_BUDGET,
        clock: Any = None,
    ) -> None:
        super().__init__(engine, clock=clock, tenant=tenant)
        if not budget > 0:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"budget={budget!r} must be a positive number of seconds",
                fix="Operator(engine, actor=..., budget=5.0)",
            )
        self.budget_ms = max(1, int(budget * 1000))  # bounds the dry run, a read over many rows
        if not isinstance(actor, str) or not actor.strip():
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"actor={actor!r}: every action names who took it",
                fix="Operator(engine, actor='alice')",
            )
        self.actor = actor.strip()
        self.read_only = read_only

    def _writable(self, what: str) -> None:
        if self.read_only:
            raise JobsError(
                X_READ_ONLY,
                cause=f"{what} was refused: this operator is read-only",
                fix="Operator(engine, actor=..., read_only=False)",
            )

    # --- one job ---------------------------------------------------------------------------------

    async def retry(self, job_id: str, *, tenant: str | None = None, note: str | None = None) -> ActionResult:
        """Retry a dead job from scratch (attempts reset). Not dead: X_INVALID_STATE. A live job
        holding its idempotency key: nothing changes, and the answer names that job."""
        self._writable("retry")
        tenant = self._tenant(tenant)
        row = await load_job(self, job_id, tenant)
        if row.state is not JobState.DEAD:
            raise JobsError(
                X_INVALID_STATE,
                cause=f"job {row.id} is {row.state.value}; only a dead job can be retried",
                fix=f"jobs cancel {row.id}" if row.state in LIVE_STATES else f"jobs show {row.id}",
            )
        res = await self.driver.job_retry_dead(
            job_id=row.id, tenant=tenant, now=self.clock.now(), actor=self.actor, note=note
        )  # type: ignore[attr-defined]
        if res is None:
            raise not_found(row.id, tenant)
        if not res.changed and res.duplicate_of is None and res.previous is not JobState.DEAD:
            raise JobsError(
                X_INVALID_STATE,
                cause=f"job {row.id} became {res.previous.value} meanwhile; only a dead job can be retried",
                fix=f"jobs show {row.id}",
            )
        return res  # type: ignore[no-any-return]

    async def retry_from_step(
        self, job_id: str, step: str, *, tenant: str | None = None, note: str | None = None
    ) -> ActionResult:
        """Run a dead or completed job again from ``step``: that step's stored result and every
        later one are discarded, earlier ones replay."""
        self._writable("retry from a step")
        tenant = self._tenant(tenant)
        row = await load_job(self, job_id, tenant)
        r = await self.driver.job_retry_from_step(  # type: ignore[attr-defined]
            job_id=row.id,
            step_name=step,
            tenant=tenant,
            now=self.clock.now(),
            actor=self.actor,
            note=note,
        )
        if r.outcome == "not-found":
            raise not_found(row.id, tenant)
        if r.outcome == "invalid-state":
            raise JobsError(
                X_INVALID_STATE,
                cause=f"job {row.id} is {r.state.value if r.state else '?'}; only a dead or completed job can be retried from a step",
                fix=f"jobs show {row.id}",
            )
        if r.outcome == "unknown-step":
            known = ", ".join(r.known_steps) or "none stored"
            raise JobsError(
                X_UNKNOWN_STEP,
                cause=f"job {row.id} has no step {step!r} (steps: {known})",
                fix=f"jobs retry {row.id} --from-step {r.known_steps[0]}" if r.known_steps else f"jobs retry {row.id}",
            )
        prev = r.state or row.state
        if r.outcome == "duplicate":
            return ActionResult(
                "retry_from_step",
                row.id,
                False,
                prev,
                prev,
                reason=f"live job {r.holder_id} holds its idempotency key",
                duplicate_of=r.holder_id,
            )
        return ActionResult(
            "retry_from_step",
            row.id,
            True,
            prev,
            JobState.READY,
            reason=f"discarded steps: {', '.join(r.discarded) or 'none'}",
        )

    async def cancel(self, job_id: str, *, tenant: str | None = None, note: str | None = None) -> ActionResult:
        """Cancel a live job (ready, delayed, suspended, parked or running: its worker sees the
        cancel at its next lease renewal). An already finished job is a clear no-op."""
        self._writable("cancel")
        tenant = self._tenant(tenant)
        row = await load_job(self, job_id, tenant)
        res = await self.driver.job_cancel(
            job_id=row.id, tenant=tenant, now=self.clock.now(), actor=self.actor, note=note
        )
        if res is None:
            raise not_found(row.id, tenant)
        if not res.cancelled:
            return ActionResult(
                "cancel",
                row.id,
                False,
                res.previous,
                res.previous,
                reason=f"the job is already {res.previous.value}: nothing to cancel",
            )
        return ActionResult(
            "cancel",
            row.id,
            True,
            res.previous,
            JobState.CANCELLED,
            reason="its worker stops it at the next lease renewal" if res.was_running else None,
        )

    # --- bulk ------------------------------------------------------------------------------------

    def _bulk_filter(self, action: str, where: JobFilter) -> JobFilter:
        if action not in _ACTIONS:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"bulk action {action!r} is not retry or cancel",
                fix="jobs retry --all --filter state=dead",
            )
        where = scoped(where, self.tenant)
        if action == "retry" and where.state not in (None, JobState.DEAD):
            raise JobsError(
                X_INVALID_STATE,
                cause=f"a bulk retry applies to dead jobs; the filter names state={where.state.value}",
                fix="jobs retry --all --filter state=dead",
            )
        if action == "cancel" and where.state is not None and where.state not in LIVE_STATES:
            raise JobsError(
                X_INVALID_STATE,
                cause=f"a bulk cancel applies to live jobs; the filter names state={where.state.value}",
                fix="jobs cancel --all --filter state=ready",
            )
        return where

    async def plan(self, action: BulkAction, where: JobFilter | None = None) -> BulkPlan:
        """The dry run: how many jobs the action would touch, grouped by stop reason, error code
        and tenant, and (retry) how many a live duplicate would dedupe away. Changes nothing."""
        where = self._bulk_filter(action, where or JobFilter())
        await self._open()
        return await self.driver.job_bulk_plan(
            action=action, where=where, now=self.clock.now(), budget_ms=self.budget_ms
        )  # type: ignore[attr-defined, no-any-return]

    async def bulk(
        self,
        action: BulkAction,
        where: JobFilter | None = None,
        *,
        note: str | None = None,
        per_second: float | None = None,
        batch_size: int = DEFAULT_BATCH,
    ) -> BulkResult:
        """Apply ``action`` to everything matching ``where``, newest first, in batches. With
        ``per_second`` the batches are paced (at most that many jobs a second) on the clock."""
        self._writable(f"bulk {action}")
        where = self._bulk_filter(action, where or JobFilter())
        if per_second is not None and not per_second > 0:
            raise JobsError(
                X_INVALID_ARGUMENT, cause=f"per_second={per_second!r} must be a positive rate", fix="--rate 50"
            )
        if not isinstance(batch_size, int) or batch_size < 1:
            raise JobsError(X_INVALID_ARGUMENT, cause=f"batch_size={batch_size!r} must be >= 1", fix="batch_size=500")
        size = batch_size if per_second is None else max(1, min(batch_size, int(per_second)))
        label = describe_filter(where)  # the audit entry names the filter the action matched
        await self._open()
        started = self.clock.now()
        changed = skipped = 0
        before: str | None = None
        while True:
            t0 = self.clock.monotonic()
            batch = await self.driver.job_bulk_apply(  # type: ignore[attr-defined]
                action=action,
                where=where,
                now=self.clock.now(),
                actor=self.actor,
                note=note,
                label=label,
                limit=size,
                before=before,
            )
            changed += len(batch.changed)
            skipped += batch.skipped
            if batch.scanned < size or batch.last_id is None:
                break
            before = batch.last_id
            if per_second is not None:
                # The pace: this batch may take size / per_second seconds in all.
                await self.clock.sleep(size / per_second - (self.clock.monotonic() - t0))
        return BulkResult(action, where, changed, skipped, started, self.clock.now(), per_second, note)

    # --- queues and events -----------------------------------------------------------------------

    async def pause(self, queue: str, *, note: str | None = None) -> QueuePause:
        """Pause a queue: durable (jobs.queue), visible in the queues view, and the claim skips
        it. Running jobs finish; nothing new starts. Pausing a paused queue is a no-op."""
        return await self._set_paused(queue, True, note)

    async def resume(self, queue: str, *, note: str | None = None) -> QueuePause:
        return await self._set_paused(queue, False, note)

    async def _set_paused(self, queue: str, paused: bool, note: str | None) -> QueuePause:
        self._writable("pause" if paused else "resume")
        if not isinstance(queue, str) or not queue.strip():
            raise JobsError(X_INVALID_ARGUMENT, cause=f"queue={queue!r} is empty", fix="jobs pause QUEUE")
        await self._open()
        return await self.driver.queue_pause(
            queue=queue.strip(), paused=paused, actor=self.actor, note=note, now=self.clock.now()
        )  # type: ignore[attr-defined, no-any-return]

    async def send_event(self, name: str, payload: Any = None, *, tenant: str | None = None) -> EventSent:
        """Send a durable event: every suspended wait of that name (and tenant) whose match the
        payload contains wakes now; a wait reached later still finds it."""
        self._writable("send event")
        tenant = self._tenant(tenant)
        if not isinstance(name, str) or not name.strip():
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"event name {name!r} is empty",
                fix="jobs event invoice.paid --payload '{\"invoice\": 42}'",
            )
        payload = {} if payload is None else payload
        if not isinstance(payload, dict):
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"an event payload is a JSON object, not {type(payload).__name__}",
                fix="--payload '{\"invoice\": 42}'",
            )
        await self._open()
        from engine.ids import IdFactory

        ids = getattr(self, "_ids", None) or IdFactory(self.clock)
        self._ids = ids
        sent = await self.driver.event_send(  # type: ignore[attr-defined]
            id=ids.new(),
            name=name.strip(),
            payload=payload,
            tenant=tenant,
            actor=self.actor,
            now=self.clock.now(),
        )
        return EventSent(sent.id, sent.name, sent.tenant, sent.sent_at, sent.woken)
