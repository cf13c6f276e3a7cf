"""Leaf module: the introspection projections the CLI and the console share.

Frozen dataclasses only, the same from every driver. Nothing here imports anything of ours but
engine.types, so the console can depend on these names without touching a driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

# The job filter and the why projections live in modules of their own; imported from here as well
# (explicit re-exports).
from engine.projections_filter import NULL as NULL
from engine.projections_filter import JobFilter as JobFilter
from engine.projections_filter import Null as Null
from engine.projections_why import Cause as Cause
from engine.projections_why import SlotHolder as SlotHolder
from engine.projections_why import WaitGroup as WaitGroup
from engine.projections_why import WhyReport as WhyReport
from engine.records import AttemptRecord, HistoryEntry
from engine.types import JobRow, JobState, StopReason

if TYPE_CHECKING:  # the durable-steps area's trace row; only named in an annotation here
    from engine.records import StepRecord

# What a discard takes with the job, said before it (a confirm, the console) and after it (the
# action's answer, jobsctl): one sentence, two tenses.
DISCARD_EFFECT = "its attempts and steps go with it; its history keeps who discarded it, when and the note"
DISCARDED = DISCARD_EFFECT.replace(" go with it", " went with it")

CountKind = Literal["exact", "at-least", "estimate"]
BulkAction = Literal["retry", "cancel", "discard"]


@dataclass(frozen=True)
class Count:
    """A count that SAYS how it was taken: ``exact``; ``at-least`` (counting stopped at a cap, so
    the real number is >= value); ``estimate`` (from planner statistics)."""

    value: int
    kind: CountKind = "exact"

    @property
    def exact(self) -> bool:
        return self.kind == "exact"

    def __str__(self) -> str:
        return {"exact": f"{self.value}", "at-least": f"≥{self.value}", "estimate": f"~{self.value}"}[self.kind]


# --- queues -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueStats:
    """One queue now. ``depth`` is ready + parked (a shed job is waiting, I8)."""

    name: str
    ready: Count
    delayed: Count
    running: Count
    suspended: Count
    parked: Count
    dead: Count
    completed_last_hour: Count
    oldest_ready_at: datetime | None  # the oldest waiting, ready or parked (I8); None: nothing waiting
    oldest_ready_age: float | None  # seconds, from the caller's clock
    # Completions per calendar minute, the 60 up to now's, oldest first (the last: the minute under
    # way); completed_last_hour is their sum.
    throughput: tuple[int, ...]
    workers: int  # live (non-stale) workers serving this queue
    slots_total: int  # their concurrency, summed
    slots_in_use: int
    paused: bool = False
    paused_by: str | None = None
    paused_at: datetime | None = None
    pause_note: str | None = None

    @property
    def depth(self) -> int:
        return self.ready.value + self.parked.value

    @property
    def estimated(self) -> bool:
        return any(
            not c.exact
            for c in (
                self.ready,
                self.delayed,
                self.running,
                self.suspended,
                self.parked,
                self.dead,
                self.completed_last_hour,
            )
        )


@dataclass(frozen=True)
class QueuesView:
    at: datetime
    queues: tuple[QueueStats, ...]

    @property
    def estimated(self) -> bool:
        return any(q.estimated for q in self.queues)


@dataclass(frozen=True)
class QueuePause:
    """The durable pause state of one queue (jobs.queue)."""

    queue: str
    paused: bool
    by: str | None = None
    at: datetime | None = None
    note: str | None = None
    changed: bool = True  # False: a clear no-op (already in that state)


# --- the jobs list ----------------------------------------------------------------------------


@dataclass(frozen=True)
class JobSummary:
    """One line of the jobs list."""

    id: str
    name: str
    queue: str
    tenant: str | None
    state: JobState
    idempotency_key: str
    priority: int
    attempt: int
    max_attempts: int
    run_at: datetime
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None = None
    error_code: str | None = None
    stop_reason: StopReason | None = None

    @classmethod
    def of(cls, row: JobRow) -> JobSummary:
        """The list line of a whole row."""
        return cls(
            id=row.id,
            name=row.name,
            queue=row.queue,
            tenant=row.tenant,
            state=row.state,
            idempotency_key=row.idempotency_key,
            priority=row.priority,
            attempt=row.attempt,
            max_attempts=row.max_attempts,
            run_at=row.run_at,
            created_at=row.created_at,
            updated_at=row.updated_at,
            finished_at=row.finished_at,
            error_code=row.error_code,
            stop_reason=row.stop_reason,
        )


@dataclass(frozen=True)
class JobPage:
    """Newest first. ``next_cursor`` continues after the last item (keyset on id, so rows
    inserted meanwhile never shift a page); None: this is the last page."""

    items: tuple[JobSummary, ...]
    next_cursor: str | None
    total: Count  # how many match the filter (capped: kind "at-least")


# --- one job ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class NextRetry:
    """What happens on the next failure (or, for a waiting job, when it next runs)."""

    attempt: int  # the attempt number the next run would be
    max_attempts: int
    at: datetime | None  # when the retry would run (None: unknown without the job's declaration)
    dead_if_fails: bool  # True: the next failure is the last (attempts exhausted)
    note: str  # one sentence, e.g. "attempt 3 of 5 at 12:04:10 if this one fails"


@dataclass(frozen=True)
class JobDetail:
    job: JobRow
    attempts: tuple[AttemptRecord, ...]
    steps: tuple[StepRecord, ...]  # the step trace (engine.records.StepRecord), in seq order
    history: tuple[HistoryEntry, ...]  # lifecycle facts and operator actions (who, when, what)
    next_retry: NextRetry | None
    why: WhyReport
    # The jobs a fan-in (ctx.step.wait_for_jobs) waits for, or its last wait waited for once it
    # went on, else those its last ctx.step.enqueue enqueued, as they stand now, in the order it
    # named them; an id that names no job any more is left out (a waiting fan-in's why counts it gone).
    awaited: tuple[JobSummary, ...] = ()
    # The jobs whose ctx.step.enqueue enqueued this one, with that step's name, as they stand now.
    parents: tuple[tuple[JobSummary, str], ...] = ()

    @property
    def awaited_as(self) -> str:
        """What ``awaited`` are to this job: "waits for" (its wait is on them now), "waited for"
        (a wait for jobs it went on from) or "enqueued" (a fan-out it did not wait for)."""
        if self.job.state is JobState.SUSPENDED and (self.job.wait or {}).get("kind") == "jobs":
            return "waits for"
        return "waited for" if any(s.kind == "jobs" for s in self.steps) else "enqueued"

    @property
    def stop_reason(self) -> StopReason | None:
        return self.job.stop_reason

    @property
    def fix(self) -> str | None:
        """What the error of its last failure said to do about it (see ``latest_fix``)."""
        return latest_fix(self.attempts)

    @property
    def trace_id(self) -> str | None:
        """The trace its enqueue or stage ran in (engine/tracing.py), to look up in the tracing
        backend; None when it was enqueued without tracing."""
        from engine.tracing import trace_id

        return trace_id(self.job.trace)


def latest_fix(attempts: Sequence[AttemptRecord]) -> str | None:
    """The fix of the latest attempt that failed with an error, the one a job's last error is:
    a handler's JobsError names one, any other exception (a lapsed lease's included) none."""
    return next((a.fix for a in reversed(attempts) if a.error is not None), None)


# --- dead letters -----------------------------------------------------------------------------


@dataclass(frozen=True)
class DeadGroup:
    """Dead letters of one (job name, error code, stop reason)."""

    name: str
    error_code: str | None
    stop_reason: StopReason | None
    count: int
    first_seen: datetime
    last_seen: datetime
    last_error: str | None  # of the most recent one
    last_job_id: str
    attempt: int  # the most recent one's: "attempt n of m"
    max_attempts: int
    tenants: int  # distinct tenants in the group ('' counts as one)
    last_fix: str | None = None  # the most recent one's: what its error said to do (latest_fix)


@dataclass(frozen=True)
class DeadLetters:
    at: datetime
    groups: tuple[DeadGroup, ...]  # most recent last_seen first
    total: Count


# --- workers ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkerView:
    id: str
    host: str
    pid: int
    queues: tuple[str, ...]
    concurrency: int
    in_use: int
    started_at: datetime
    heartbeat_at: datetime
    heartbeat_age: float  # seconds, from the caller's clock
    stale: bool  # no heartbeat within its staleness window (stale_after)
    stopping: bool = False
    drain_requested_by: str | None = None  # an operator asked it to drain (it drains at its next heartbeat)
    drain_requested_at: datetime | None = None
    heartbeat_interval: float | None = None  # seconds between its heartbeats (None: a release before 0021's worker)
    # Its staleness window, in seconds: more than 3 of its heartbeats missed, or the view's
    # stale_after, whichever is longer (None: the view's stale_after).
    stale_after: float | None = None


@dataclass(frozen=True)
class WorkersView:
    at: datetime
    workers: tuple[WorkerView, ...]
    stale_after: float  # seconds: the shortest staleness window (each worker's own is WorkerView.stale_after)


# --- actions ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DrainRequest:
    """An operator's request that a worker stop claiming and drain, as it stands on the worker's
    row. ``changed`` False: it was asked already (the first request stands)."""

    worker: str
    requested_by: str | None
    requested_at: datetime
    note: str | None = None
    changed: bool = True


@dataclass(frozen=True)
class ActionResult:
    """The answer of one id-addressed action. ``changed`` False is a clear no-op, with ``reason``."""

    action: str  # retry | retry_from_step | cancel | discard
    job_id: str
    changed: bool
    previous: JobState
    state: JobState  # after the action; a discarded job keeps its last state (its row is gone)
    reason: str | None = None
    duplicate_of: str | None = None  # a live job holding the same dedupe key
    discarded: tuple[str, ...] = ()  # retry_from_step: the steps whose stored results were dropped
    also: tuple[ActionResult, ...] = ()  # with its children: each job below it the cancel or retry reached


@dataclass(frozen=True)
class BulkGroup:
    stop_reason: StopReason | None
    error_code: str | None
    tenant: str | None
    count: int


@dataclass(frozen=True)
class BulkPlan:
    """A bulk action's dry run: what it would touch, before anything changes."""

    action: BulkAction
    filter: JobFilter
    matched: int  # jobs the action applies to (retry, discard: dead ones; cancel: live ones)
    groups: tuple[BulkGroup, ...]
    deduped: int  # retry only: how many a live duplicate holding the key would dedupe away
    at: datetime
    # retry only: how many are fan-ins whose stored wait answered a job not completed (retried
    # alone, each replays that answer: `jobsctl retry ID --children` runs the wait again), the newest
    replays: int = 0
    replay_example: str | None = None

    @property
    def would_change(self) -> int:
        return self.matched - self.deduped


@dataclass(frozen=True)
class BulkResult:
    action: BulkAction
    filter: JobFilter
    changed: int
    skipped: int  # matched at plan time but no longer eligible, or deduped
    started_at: datetime
    finished_at: datetime
    per_second: float | None = None  # the pace it was run at (None: unpaced)
    note: str | None = None
    stopped: bool = False  # ended by its ``stop`` between batches, before it ran out of jobs


@dataclass(frozen=True)
class BulkBatch:
    """One batch of a bulk action, as a driver answers it (the Operator paces the batches).

    Rows are taken newest first below ``before``; ``last_id`` is where the next batch starts."""

    changed: tuple[str, ...]
    skipped: int  # scanned but left alone (deduped by a live holder of its key)
    scanned: int
    last_id: str | None


@dataclass(frozen=True)
class LimitState:
    """A fleet limit as stored: the slot rows of a concurrency key, or a rate bucket."""

    key: str
    slots: tuple[SlotHolder, ...] = ()  # every slot row of the key (job_id None: free)
    tokens: float | None = None  # a rate bucket's tokens at refilled_at (None: no bucket)
    refilled_at: datetime | None = None

    @property
    def slots_held(self) -> int:
        return sum(1 for s in self.slots if s.job_id is not None)
