"""What the read side and the operators' calls answer across the driver seam: a job's history,
attempts, steps and events as the console reads them, workers as the fleet lists them, the
maintenance leader's findings, backfill passes, a cancel's and a step retry's answers.

A worker process claims, runs and settles jobs without any of these (engine.types holds what it
needs): the driver modules import them where they build one, so a worker never pays for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from engine.types import JobState, StepKind, StepStatus


@dataclass(frozen=True)
class CancelResult:
    job_id: str
    previous: JobState
    cancelled: bool  # False: a clear no-op (already final)
    was_running: bool = False


@dataclass(frozen=True)
class HistoryEntry:
    """One line of a job's history: lifecycle facts and operator actions (who, when, what)."""

    job_id: str
    at: datetime
    kind: str
    actor: str | None = None
    note: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AuditEntry:
    """One row of the audit log (engine/audit.py): an operator action that changed something,
    written in the transaction of its change. ``target`` is what it acted on (a queue, a worker id,
    a job id, a task, a backfill, a bulk run's filter); ``tenant`` the tenant it acted within
    (None: the whole fleet); ``id`` is given by the database (None until written)."""

    at: datetime
    actor: str | None
    action: str
    target: str
    tenant: str | None = None
    note: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    id: int | None = None


@dataclass(frozen=True)
class AttemptRecord:
    """One settled claim of a job: who ran it, when, and how it ended."""

    job_id: str
    run: int
    attempt: int
    worker: str
    started_at: datetime
    finished_at: datetime
    outcome: str  # completed | retried | dead | suspended | parked | released | lost | cancelled
    error_code: str | None = None
    error: str | None = None
    traceback: str | None = None  # a failed attempt's, its tail kept (WorkerConfig.traceback_limit)
    fix: str | None = None  # a failed attempt's: what its error said to do (a JobsError's fix), else None


@dataclass(frozen=True)
class StepRecord:
    """One line of a job's step trace, the projection the console's job detail timeline reads."""

    job_id: str
    name: str
    seq: int
    kind: StepKind
    status: StepStatus
    attempt: int
    started_at: datetime
    finished_at: datetime | None
    duration: float | None  # seconds
    error: str | None
    result_size: int | None  # bytes of the stored JSON result


@dataclass(frozen=True)
class EnqueuedBy:
    """A job whose enqueue step (``ctx.step.enqueue``) enqueued another: the parent and its step."""

    job_id: str
    step: str


@dataclass(frozen=True)
class EventRecord:
    """A durable event: a wait of the same name and tenant whose match its payload contains takes it."""

    id: str
    name: str
    tenant: str | None
    payload: dict[str, Any]
    sent_at: datetime
    sent_by: str | None = None


@dataclass(frozen=True)
class SentEvent:
    id: str
    name: str
    tenant: str | None
    sent_at: datetime
    woken: int  # suspended waits made claimable now


StepRetryOutcome = Literal["retried", "not-found", "invalid-state", "unknown-step", "duplicate"]


@dataclass(frozen=True)
class StepRetry:
    """What `job_retry_from_step` did; anything but ``retried`` changed nothing."""

    job_id: str
    outcome: StepRetryOutcome
    state: JobState | None = None  # the job's state before (or, refused, now)
    step: str | None = None
    discarded: tuple[str, ...] = ()  # the steps whose stored results were dropped, in seq order
    holder_id: str | None = None  # duplicate: the live job holding the dedupe key
    known_steps: tuple[str, ...] = ()  # unknown-step: the names that exist


@dataclass(frozen=True)
class WorkerRecord:
    """A registered worker process, as the `workers` projection and the console read it."""

    id: str
    host: str
    pid: int
    queues: tuple[str, ...]
    concurrency: int
    in_use: int
    started_at: datetime
    heartbeat_at: datetime
    stopping: bool
    heartbeat_age: float  # seconds since the last heartbeat landed, at the `now` asked about
    drain_requested_by: str | None = None  # an operator asked it to drain (jobsctl workers drain ID)
    drain_requested_at: datetime | None = None
    heartbeat_interval: float | None = None  # seconds between its heartbeats (None: a worker of a release before 0021)


@dataclass(frozen=True)
class IndexSize:
    """A GIN index of the jobs tables (index_sizes): its size now and its baseline, its size right
    after its last rebuild (or when first seen), both in bytes."""

    index: str  # schema.name
    bytes: int
    baseline: int


@dataclass(frozen=True)
class TableRows:
    """A table of the jobs schema (table_rows): its live and dead row versions as the server's
    statistics count them, whether this role may vacuum it (it owns the table), and whether a
    transaction older than its last vacuum is open (every version dead since is still visible)."""

    table: str  # schema.name
    live: int
    dead: int
    owned: bool
    held: bool = False


@dataclass(frozen=True)
class SettledBucket:
    """A bucket of settled rows (settled_buckets): its number, when it opened, when it was sealed
    (None: the open one, jobs.job_done_now)."""

    n: int
    opened_at: datetime
    sealed_at: datetime | None


@dataclass(frozen=True)
class IndexRebuilt:
    """One index rebuilt by index_rebuild: its size before and after, and how long it took."""

    index: str
    before: int
    after: int
    seconds: float


BackfillStatus = Literal["queued", "running", "completed", "failed", "stalled", "cancelled"]


@dataclass(frozen=True, slots=True)
class BackfillRun:
    """One pass of a backfill, as its ledger row (jobs.backfill) holds it. ``dry_run`` passes read
    and count only; a completed write pass is what makes the backfill applied in its environment.
    ``planned`` is count() when the pass began; ``swept`` and ``batches`` grow as it goes."""

    id: str
    name: str
    environment: str
    job_id: str | None
    status: BackfillStatus
    dry_run: bool
    forced: bool
    started_at: datetime
    app_version: str | None = None
    actor: str | None = None
    finished_at: datetime | None = None
    planned: int | None = None
    swept: int = 0
    batches: int = 0
    error: str | None = None
    resumed_at: datetime | None = None  # when the pass's current run began
    resumed_swept: int = 0  # rows swept before it


@dataclass(frozen=True, slots=True)
class LivePass:
    """A live (not finished) pass job of a backfill: one name holds at most one (I22)."""

    job_id: str
    job_name: str
    state: JobState


def job_entry(
    at: datetime,
    actor: str | None,
    action: str,
    job_id: str,
    *,
    name: str,
    queue: str,
    tenant: str | None,
    note: str | None,
    was: str,
    **detail: Any,
) -> AuditEntry:
    """A job action's audit entry, as both drivers write it: the job's id its target, its tenant the
    entry's, and in its detail the job's name and queue, the state it was in (``from``), and what
    else the action says (``detail``)."""
    return AuditEntry(at, actor, action, job_id, tenant, note, {"name": name, "queue": queue, "from": was, **detail})


def backfill_started(run: BackfillRun) -> AuditEntry:
    """The ``backfill.start`` audit entry of a pass whose ledger row was just written. Every pass is
    started by an operator (BackfillControl.start, the one door of a pass job), and its row is
    written once: by the starter, or by the pass itself when it begins before the starter's write
    lands (or after the starter died); either way the entry names the operator who started it."""
    detail = {
        "pass": run.id,
        "environment": run.environment,
        "write": not run.dry_run,
        "forced": run.forced,
        "job_id": run.job_id,
    }
    return AuditEntry(run.started_at, run.actor, "backfill.start", run.name, detail=detail)
