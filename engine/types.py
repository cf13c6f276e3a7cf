"""Leaf module: job states and the rows a worker's claims, runs and settles pass across the
driver seam. What the read side and the operators' calls answer is in engine.records: a worker
process never builds those classes (each frozen dataclass costs ~0.8 ms of a process start).

Nothing here imports anything of ours, so every layer can depend on it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, Literal, NamedTuple, Protocol

JSON = Any  # a JSON value: dict, list, str, int, float, bool or None


class JobState(enum.StrEnum):
    READY = "ready"  # claimable now
    DELAYED = "delayed"  # claimable at run_at
    RUNNING = "running"  # claimed and leased
    SUSPENDED = "suspended"  # waiting on a sleep or an event: not an attempt
    PARKED = "parked"  # shed by a limit: WAITING, counts as ready for depth and age
    COMPLETED = "completed"
    DEAD = "dead"  # dead letter, with a stop reason
    CANCELLED = "cancelled"


LIVE_STATES: tuple[JobState, ...] = (
    JobState.READY,
    JobState.DELAYED,
    JobState.RUNNING,
    JobState.SUSPENDED,
    JobState.PARKED,
)
FINAL_STATES: tuple[JobState, ...] = (JobState.COMPLETED, JobState.DEAD, JobState.CANCELLED)
# A claim takes these once run_at has come. A suspended row's run_at is its wake-up (the sleep's
# end, or the next poll of an event wait); a parked row's is when the limit that shed it may free.
CLAIMABLE_STATES: tuple[JobState, ...] = (
    JobState.READY,
    JobState.DELAYED,
    JobState.PARKED,
    JobState.SUSPENDED,
)

StopReason = Literal["terminal", "attempts-exhausted"]
Classification = Literal["terminal", "retry-after", "retryable"]
NackOutcome = Literal["retry", "dead", "park", "suspend", "release"]
RenewStatus = Literal["ok", "lost", "cancelled"]


class NewJob(NamedTuple):
    """One job to insert. ``run_at`` None means now. A NamedTuple, not a frozen dataclass: a batch
    builds one per job, and a frozen dataclass's __init__ (a setattr per field) cost 3x as much."""

    id: str
    name: str
    queue: str
    idempotency_key: str
    input: JSON
    max_attempts: int
    tenant: str | None = None
    run_at: datetime | None = None
    priority: int = 0
    # ``input`` as JSON text when the caller already dumped it (the engine does, checking it): the
    # Postgres driver writes it as is instead of dumping it again. None: the driver dumps ``input``.
    input_text: str | None = None
    # When the job came to exist, when not at the insert: a staged job exists from its stage
    # (the outbox row's staged_at), so an event sent between the stage and its publication is not
    # taken for one from before the job. None: the insert's now.
    created_at: datetime | None = None
    # The trace context of the code that enqueued it (engine.tracing): the propagator's carrier,
    # {"traceparent": ...}. None when the engine does not trace.
    trace: dict[str, str] | None = None


@dataclass(frozen=True)
class EnqueueResult:
    """What an enqueue answers per job: its id, whether a live job already held its key (the
    answer is then that job), and its state."""

    id: str
    deduped: bool
    state: JobState


@dataclass(frozen=True)
class JobRow:
    """A job row as stored, the same from every driver."""

    id: str
    name: str
    queue: str
    tenant: str | None
    idempotency_key: str
    input: JSON
    state: JobState
    priority: int
    attempt: int  # attempts burned so far (a suspension or a shed burns none)
    max_attempts: int
    run: int  # claims so far: with claimed_by, the fence token of the current claim
    run_at: datetime
    created_at: datetime
    updated_at: datetime
    claimed_by: str | None = None
    claimed_at: datetime | None = None
    lease_until: datetime | None = None
    finished_at: datetime | None = None
    result: JSON = None
    last_error: str | None = None
    error_code: str | None = None
    stop_reason: StopReason | None = None
    wait: dict[str, Any] | None = None  # why a suspended/parked row waits (sleep, event, limit)
    # A parked row: when it first fell due, kept however often a limit sheds it again (I24).
    waiting_since: datetime | None = None
    # The trace context of the code that enqueued or staged it (engine.tracing), None without one.
    trace: dict[str, str] | None = None


def ready_since(row: JobRow, now: datetime) -> datetime | None:
    """When a waiting row became claimable; None when it is not waiting. Ready, parked (a shed
    job waits, I8) and due delayed rows count: a parked row since it first fell due however often
    it was shed since, any other since it fell due (run_at). The memory driver's queues view and
    gauges and the why of a parked job read it; sql/queries (queue_oldest_ready, queue_gauges)
    spell the same rule."""
    if row.state is JobState.PARKED:
        return row.waiting_since or row.updated_at
    if row.state is JobState.READY or (row.state is JobState.DELAYED and row.run_at <= now):
        return row.run_at
    return None


@dataclass(frozen=True)
class Claim:
    """The claimant token every mutation of a claimed row is fenced on (I15)."""

    job_id: str
    worker: str
    run: int


@dataclass(frozen=True)
class ClaimedJob:
    row: JobRow

    @cached_property
    def claim(self) -> Claim:  # built once per run (cached in the instance dict, past the freeze)
        assert self.row.claimed_by is not None
        return Claim(self.row.id, self.row.claimed_by, self.row.run)


@dataclass(frozen=True)
class ClaimBatch:
    """What one worker claim took, and when its queues next have work it did not take: the run_at
    of the first ready row left in claim order, else the earliest delayed, parked or suspended
    row, of unpaused queues (None: nothing claimable waits). ``next_due`` is worked out only
    when the claim came back short of its limit; a full claim is followed by another at once."""

    jobs: list[ClaimedJob]
    next_due: datetime | None = None


@dataclass(slots=True)  # not frozen: one is built per completed job, and a frozen __init__ costs ~2 us more
class Ack:
    claim: Claim
    result: JSON = None
    # ``result`` as JSON text when the runner already dumped it (checking that it serialises): the
    # Postgres driver writes it as is instead of dumping it again.
    result_text: str | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Nack:
    """Hand a claimed job back.

    ``retry``: ready again at ``run_at``, the attempt burned, ``error`` recorded.
    ``dead``: a dead letter with ``stop_reason``. ``park``: shed by a limit, no attempt, no error.
    ``suspend``: waiting on a sleep or an event, no attempt. ``release``: drained, no attempt.
    """

    claim: Claim
    outcome: NackOutcome
    run_at: datetime | None = None
    error: str | None = None
    error_code: str | None = None
    stop_reason: StopReason | None = None
    wait: dict[str, Any] | None = None
    traceback: str | None = None  # retry and dead: the failed attempt's, already bounded by the worker
    fix: str | None = None  # retry and dead: what the error said to do about it (a JobsError's fix)


@dataclass(frozen=True)
class Renewal:
    claim: Claim
    status: RenewStatus
    lease_until: datetime | None = None


# --- durable steps and events ------------------------------------------------------------------

StepKind = Literal["run", "sleep", "event", "jobs", "enqueue"]
# completed | failed (a run step that raised) | waiting (a sleep or an event wait not yet over)
# | timed-out (an event wait whose timeout passed with no matching event: it replays as None)
StepStatus = Literal["completed", "failed", "waiting", "timed-out"]


@dataclass(frozen=True)
class StoredStep:
    """One step of a job as the step store holds it: what a replay reads and a run writes."""

    job_id: str
    name: str
    seq: int  # order of first reach within the job: retry-from-step discards by it
    kind: StepKind
    status: StepStatus
    attempt: int
    run: int
    started_at: datetime
    finished_at: datetime | None = None
    result: JSON = None
    error: str | None = None
    wait: dict[str, Any] | None = None  # a waiting sleep's end, or the event wait it describes
    event_id: str | None = None  # the event a completed wait consumed (never consumed twice per job)

    @property
    def job_ids(self) -> list[str] | None:
        """The jobs this step names: an enqueue step's (its result), a wait for jobs' (its wait);
        None for any other step."""
        ids = self.result if self.kind == "enqueue" else (self.wait or {}).get("jobs") if self.kind == "jobs" else None
        return [str(i) for i in ids] if isinstance(ids, list) else None


class StepLike(Protocol):
    """A stored step or a line of a step trace (engine.records.StepRecord): its kind and status."""

    @property
    def kind(self) -> str: ...

    @property
    def status(self) -> str: ...


def waited_out(step: StepLike) -> bool:
    """A wait for jobs that timed out: its stored answer is none, which a plain retry replays at
    once; a retry with children runs the wait again, and a bulk retry's dry run counts the job."""
    return step.kind == "jobs" and step.status == "timed-out"


# --- workers and gauges ------------------------------------------------------------------------


@dataclass(frozen=True)
class Orphan:
    """A running job re-delivered because its worker is gone (job_rescue_orphaned)."""

    job_id: str
    state: JobState  # ready, or dead when that was its last attempt
    queue: str
    worker: str  # the claimant that is gone


@dataclass(frozen=True)
class Heartbeat:
    """What a worker's heartbeat answers (None instead: its row is gone, it was reaped)."""

    drain_requested_by: str | None = None  # set: an operator asked this worker to drain
    drain_requested_at: datetime | None = None

    @property
    def drain_requested(self) -> bool:
        return self.drain_requested_at is not None


@dataclass(frozen=True)
class WorkerRegistration:
    """What a worker process registers (worker_register); registering an id again replaces its row.
    ``started_at``: when the process started (None: the registration's ``now``);
    ``heartbeat_interval``: seconds between its heartbeats, which the workers view judges it stale
    by (None: unknown); ``stopping``: it drains already; ``drain``: the operator's drain request it
    had seen, which the new row carries (its note is not kept)."""

    id: str
    host: str
    pid: int
    queues: tuple[str, ...]
    concurrency: int
    started_at: datetime | None = None
    heartbeat_interval: float | None = None
    stopping: bool = False
    drain: Heartbeat | None = None


@dataclass(frozen=True)
class QueueGauges:
    """The alertable gauges of one queue (I24): depth counts ready AND parked (I8)."""

    queue: str
    depth: int  # ready + parked + delayed rows already due
    oldest_ready_seconds: float  # 0.0 when nothing waits
    dead: int


GaugeCount = tuple[str, int, datetime | None, int]  # queue, depth, oldest waiting since, dead


def gauges_at(counts: Iterable[GaugeCount], now: datetime) -> list[QueueGauges]:
    """A fleet count of queue gauges read at ``now``: each oldest age measured to ``now``."""
    return [
        QueueGauges(q, depth, max(0.0, (now - since).total_seconds()) if since else 0.0, dead)
        for q, depth, since, dead in counts
    ]
