"""The Driver protocol: the one seam between the engine and storage, one protocol per area.

Noun first, keyword-only, frozen dataclasses back (never dicts). Both drivers implement every
member with the same meaning; the contract suite checks the members by reflection and runs the
same behaviour tests against each.

Each area is one name spelled four times: a protocol here (``JobsArea`` ...), its memory half
(engine/drivers/memory/jobs.py), its Postgres half (engine/drivers/postgres/jobs.py) and its
named statements (sql/queries/jobs.sql). ``AREAS`` lists them; ``Driver`` is their composition
with ``Lifecycle``. Every driver implements every member, so nothing probes a driver for one.

A new area (outbox, schedules, backfills) lands the same way:

1. ``class OutboxArea(Protocol)`` with its members, in engine/drivers/base_outbox.py (as the read
   models' are in base_introspect.py, so this module stays short), (``outbox_stage(*, ..., now)``),
   added to ``Driver``'s bases and to ``AREAS`` as ``"outbox": OutboxArea``;
2. sql/queries/outbox.sql, each statement headed ``-- name: outbox_claim :many``;
3. engine/drivers/postgres/outbox.py, ``class PostgresOutbox(PostgresBase)``: each member runs
   its statement through the base (``await self._rows(Q.outbox_claim, {...})``), whose
   cardinality the header declares;
4. engine/drivers/memory/outbox.py, ``class MemoryOutbox(MemoryBase)`` over a typed table added
   to ``MemoryState`` (a dataclass field, never a string-keyed dict);
5. both classes added to ``PostgresDriver``'s and ``MemoryDriver``'s bases, and the behaviour
   tests to tests/contract/test_outbox.py. The contract suite then checks by reflection that
   both drivers implement each new member, with the protocol's signature, in the area's module.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from engine.drivers.base_audit import AuditArea
from engine.drivers.base_backfills import BackfillsArea
from engine.drivers.base_introspect import IntrospectArea
from engine.drivers.base_maintenance import MaintenanceArea
from engine.drivers.base_outbox import OutboxArea
from engine.drivers.base_schedules import SchedulesArea
from engine.types import (
    Ack,
    Claim,
    ClaimBatch,
    EnqueueResult,
    Heartbeat,
    JobRow,
    Nack,
    NewJob,
    QueueGauges,
    Renewal,
    StoredStep,
    WorkerRegistration,
)

if TYPE_CHECKING:  # the read models and records named in annotations only: a worker never loads them
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
    from engine.records import (
        AttemptRecord,
        CancelResult,
        EnqueuedBy,
        EventRecord,
        HistoryEntry,
        SentEvent,
        StepRecord,
        StepRetry,
        WorkerRecord,
    )


class Lifecycle(Protocol):
    """Opening, closing and naming the storage."""

    kind: str  # "memory" | "postgres"

    async def open(self) -> None:
        """Connect and check the schema (X_SCHEMA_MISSING and X_SCHEMA_OUTDATED name `jobsctl migrate`)."""
        ...

    async def close(self) -> None: ...

    async def reset(self) -> None:
        """Drop the running loop's connections at once (closed in the background, never waited
        on), so the next call connects afresh: after the server went away or froze, a pool's own
        reconnection backs off for many seconds, a fresh connection answers at once."""
        ...

    def describe(self) -> str:
        """What this storage is, for a person: ``memory``, or ``postgres`` and the DSN without
        its password (I25)."""
        ...


class JobsArea(Protocol):
    """The core queue: enqueue, settle, cancel, read one job (the claim is the worker's)."""

    async def job_enqueue(self, *, jobs: Sequence[NewJob], now: datetime) -> list[EnqueueResult]:
        """Insert a batch (one round trip). A live row holding (name, tenant or '', key) answers
        as deduped with ITS id; never another tenant's or another job name's row (I2)."""
        ...

    async def job_enqueue_chunks(self, *, chunks: Iterable[Sequence[NewJob]], now: datetime) -> list[EnqueueResult]:
        """A big batch, all or nothing: ``chunks`` is read lazily, each chunk sent while the next
        is built, and one that raises (a row that fails its checks) leaves nothing written. The
        answers as ``job_enqueue`` gives them, in order; a key held across chunks dedupes."""
        ...

    async def job_ack_many(self, *, acks: Sequence[Ack], now: datetime) -> list[str]:
        """Complete claims; answers the ids that landed. A stale claimant's ack is refused (I15)."""
        ...

    async def job_nack(self, *, nack: Nack, now: datetime) -> bool:
        """Hand a claim back; False when the claimant no longer holds the row (I15)."""
        ...

    async def job_renew_many(self, *, claims: Sequence[Claim], now: datetime, lease_seconds: float) -> list[Renewal]:
        """Extend leases; per claim ok | cancelled (an operator cancelled it) | lost."""
        ...

    async def job_cancel(
        self, *, job_id: str, tenant: str | None, now: datetime, actor: str | None, note: str | None = None
    ) -> CancelResult | None:
        """Cancel a live job. None when no job has that id for that tenant (I25)."""
        ...

    async def job_get(self, *, job_id: str) -> JobRow | None: ...

    async def job_get_many(self, *, job_ids: Sequence[str]) -> list[JobRow]:
        """The rows of those ids that name a job, in no particular order (one read)."""
        ...

    async def job_awaited_by(self, *, job_id: str) -> list[JobRow]:
        """The suspended fan-ins (``ctx.step.wait_for_jobs``) whose wait names ``job_id``, by id,
        at most 20."""
        ...

    async def job_history(self, *, job_id: str) -> list[HistoryEntry]: ...

    async def job_attempts(self, *, job_id: str) -> list[AttemptRecord]: ...


class WorkersArea(Protocol):
    """Worker registration, the worker's claim, wake-ups and queue gauges."""

    async def worker_register(self, *, worker: WorkerRegistration, now: datetime) -> None:
        """Register a worker process, replacing the row an id had."""
        ...

    async def worker_heartbeat(self, *, id: str, in_use: int, stopping: bool, now: datetime) -> Heartbeat | None:
        """Stamp the heartbeat and slots in use; None when the row is gone (reaped). The answer
        carries an operator's drain request, if one stands (worker_drain_request)."""
        ...

    async def worker_deregister(self, *, id: str) -> None: ...

    async def worker_presence_hold(self, *, id: str) -> None:
        """Hold worker ``id``'s presence and note it on its row: on PostgreSQL a session-level
        advisory lock on a connection of its own, which the server frees the moment that session
        ends (a killed process's included); a presence still held, whose session answers, is left
        as it is. In the memory driver, which cannot die apart from its workers, presence is a
        flag that only ``worker_presence_release`` ends. ConnectionLost when the database does not
        answer."""
        ...

    async def worker_presence_release(self, *, id: str) -> None:
        """End worker ``id``'s presence (on PostgreSQL: close its session). Jobs it still holds
        are orphans from then on (job_rescue_orphaned)."""
        ...

    async def worker_list(self, *, now: datetime) -> list[WorkerRecord]:
        """Every registered worker by id, with its heartbeat age at ``now``."""
        ...

    async def worker_claim(
        self,
        *,
        queues: Sequence[str],
        limit: int,
        worker: str,
        now: datetime,
        lease_seconds: float,
        after: Mapping[str, datetime] | None = None,
    ) -> ClaimBatch:
        """The one claim: lease up to ``limit`` due rows of unpaused ``queues`` to ``worker``, in
        priority, run_at, id order. Each claim burns one attempt (a later park/suspend/release
        hands it back) and clears what a finished run left (finished_at, result, stop reason).
        With a claim short of ``limit``, also when the queues next have work it did not take (an
        idle worker's wake-up). ``after``: per queue, read only rows due at or after that time
        (the worker's floor, engine/runtime/floors.py); a queue not in it is read from its head."""
        ...

    async def queue_wait(self, *, queues: Sequence[str], timeout: float) -> bool:
        """Wait up to ``timeout`` real seconds for new work in ``queues`` (LISTEN); True when woken,
        and at once when the wait (re)subscribed: what was sent before that reached no one."""
        ...

    async def queue_notify(self, *, queues: Sequence[str]) -> None:
        """Wake idle workers of ``queues`` (NOTIFY)."""
        ...

    async def queue_gauges(self, *, now: datetime, max_age: float = 0.0) -> list[QueueGauges]:
        """Per queue: depth (ready + parked + due delayed, I8), oldest waiting age, dead letters.
        Counted at most once per ``max_age`` seconds by the whole fleet: within it, the last count
        answers (depth and dead as counted then, the oldest age advanced to ``now``); 0 counts now."""
        ...


class LimitsArea(Protocol):
    """Fleet-wide concurrency slots and rate buckets."""

    async def slot_acquire(
        self, *, key: str, limit: int, job_id: str, worker: str, now: datetime, lease_seconds: float
    ) -> int | None:
        """Take one of ``limit`` fleet-wide slots of ``key`` for a job, under a lease; None: all held."""
        ...

    async def slot_release(self, *, key: str, slot: int, job_id: str) -> None: ...

    async def slot_renew_many(
        self, *, worker: str, job_ids: Sequence[str], now: datetime, lease_seconds: float
    ) -> list[str]:
        """Extend this worker's slot leases for these jobs; answer the jobs whose slot was renewed
        (one missing lost its slot: it lapsed and another holder took it)."""
        ...

    async def rate_take(self, *, key: str, limit: int, per: float, now: datetime) -> float:
        """Take a token from the bucket of ``key``: 0.0 when taken, else seconds until one refills."""
        ...


class StepsArea(Protocol):
    """Durable steps and events."""

    async def step_load(self, *, job_id: str) -> list[StoredStep]:
        """Every stored step of a job with its result, in seq order: what a replay answers from."""
        ...

    async def step_save(self, *, claim: Claim, step: StoredStep) -> bool:
        """Upsert one step by (job, name), fenced on the claim (running, claimed_by + run); False
        when the claimant no longer holds the row: a stale run never writes (I10, I15)."""
        ...

    async def step_enqueue(
        self, *, claim: Claim, step: StoredStep, jobs: Sequence[NewJob], now: datetime
    ) -> list[EnqueueResult] | None:
        """Enqueue ``jobs`` (deduped as job_enqueue, I2) and save ``step`` with the answered ids
        as its result, in one commit fenced on the claim: None, and nothing written, when the
        claimant no longer holds the row. A fan-out that is written is written whole, once."""
        ...

    async def step_enqueued_by(self, *, job_id: str) -> list[EnqueuedBy]:
        """The jobs whose enqueue step enqueued ``job_id`` (its parent, or several when fan-outs
        shared its key), by parent id, at most 5."""
        ...

    async def step_list(self, *, job_id: str) -> list[StepRecord]:
        """A job's step trace in seq order (no results, their sizes only)."""
        ...

    async def event_send(
        self, *, id: str, name: str, payload: dict[str, Any], tenant: str | None, actor: str | None, now: datetime
    ) -> SentEvent:
        """Store a durable event and make the suspended waits it matches claimable at ``now``."""
        ...

    async def event_find(
        self, *, job_id: str, name: str, tenant: str | None, match: dict[str, Any], since: datetime, now: datetime
    ) -> EventRecord | None:
        """The earliest event of ``name`` and ``tenant`` whose payload contains ``match`` (jsonb @>),
        sent in [since, now], that no step of the job has taken."""
        ...

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
        """Re-run a dead or completed job from ``step_name``: drop that step's and later steps'
        results (by seq), reset it to ready with attempts reset, record who. Refusals change nothing."""
        ...


class ActionsArea(Protocol):
    """Operator actions: fenced on state, audited."""

    async def job_retry_dead(
        self, *, job_id: str, tenant: str | None, now: datetime, actor: str | None, note: str | None = None
    ) -> ActionResult | None:
        """Make a dead job ready (attempts reset) and write the audit entry; a live holder of its
        key changes nothing and is named. None when no job has that id for that tenant (I25)."""
        ...

    async def job_bulk_plan(
        self, *, action: BulkAction, where: JobFilter, now: datetime, budget_ms: int | None
    ) -> BulkPlan:
        """A bulk action's dry run: matched jobs grouped by stop reason, code, tenant; deduped."""
        ...

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
        """One batch of a bulk action: up to ``limit`` matching rows below ``before``, newest first;
        with ``upto`` (the instant its dry run read), only rows that matched then: a dead row
        settled by then (retry, discard), a live row created by then (cancel)."""
        ...

    async def queue_pause(
        self, *, queue: str, paused: bool, actor: str | None, note: str | None, now: datetime
    ) -> QueuePause:
        """Pause or resume a queue durably; already in that state: ``changed`` False."""
        ...

    async def queue_names_known(self) -> list[str]:
        """Every queue a job row (any state), a registered worker or a pause row names, sorted."""
        ...

    async def job_find(
        self, *, fragment: str, tenant: str | None, limit: int, budget_ms: int | None
    ) -> list[JobSummary]:
        """Up to ``limit`` jobs of ``tenant`` (None: any) whose id, as 32 hex digits, begins with
        ``fragment`` (hex, lower case), or, when none does, ends with it; by id."""
        ...

    async def job_discard(
        self, *, job_id: str, tenant: str | None, now: datetime, actor: str | None, note: str | None = None
    ) -> ActionResult | None:
        """Delete a dead job with its attempts and steps; its history is replaced by one
        ``discarded`` entry (who, when, the note, what the job was). A job no longer dead changes
        nothing (``changed`` False). None when no job has that id for that tenant (I25)."""
        ...

    async def worker_drain_request(
        self, *, id: str, actor: str | None, note: str | None, now: datetime
    ) -> DrainRequest | None:
        """Ask a registered worker to drain: its next heartbeat answers the request. Asked
        already: the standing request, ``changed`` False. None when no worker has that id."""
        ...


@runtime_checkable
class Driver(
    Lifecycle,
    JobsArea,
    WorkersArea,
    LimitsArea,
    MaintenanceArea,
    StepsArea,
    IntrospectArea,
    ActionsArea,
    BackfillsArea,
    OutboxArea,
    SchedulesArea,
    AuditArea,
    Protocol,
):
    """Storage for jobs: every area's members. Every time-comparing call takes ``now`` from the
    engine's clock."""


# Each area by the name of its files: engine/drivers/{memory,postgres}/NAME.py, sql/queries/NAME.sql.
AREAS: dict[str, type] = {
    "jobs": JobsArea,
    "workers": WorkersArea,
    "limits": LimitsArea,
    "maintenance": MaintenanceArea,
    "steps": StepsArea,
    "introspect": IntrospectArea,
    "actions": ActionsArea,
    "backfills": BackfillsArea,
    "outbox": OutboxArea,
    "schedules": SchedulesArea,
    "audit": AuditArea,
}
