"""Leaf module: the outbox's rows and projections, as they cross the driver seam.

Beside engine.types rather than in it: the outbox is one area with its own rows. Like engine.types,
nothing here imports anything of ours but engine.types.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from engine.types import EnqueueResult, NewJob

OutboxStatus = Literal["published", "held", "failing", "waiting"]


@dataclass(frozen=True)
class OutboxRow:
    """One staged enqueue as stored, the same from every driver."""

    id: str
    staged_at: datetime
    name: str
    queue: str
    tenant: str | None
    idempotency_key: str
    input: Any
    run_at: datetime | None
    max_attempts: int
    priority: int
    claimed_by: str | None = None  # the relay holding the claim
    claim_token: str | None = None  # the claim's fence (I18)
    claimed_at: datetime | None = None
    lease_until: datetime | None = None
    published_at: datetime | None = None
    job_id: str | None = None
    attempts: int = 0  # publishes that failed
    last_error: str | None = None
    failed_at: datetime | None = None
    trace: dict[str, str] | None = None  # the stager's trace context (engine.tracing)

    def new_job(self, job_id: str) -> NewJob:
        """The job this row publishes, under a fresh id (the enqueue path's row)."""
        return NewJob(
            job_id,
            self.name,
            self.queue,
            self.idempotency_key,
            self.input,
            self.max_attempts,
            self.tenant,
            self.run_at,
            self.priority,
            created_at=self.staged_at,
            trace=self.trace,
        )

    def status(self, now: datetime) -> OutboxStatus:
        if self.published_at is not None:
            return "published"
        if self.claim_token is not None and self.lease_until is not None and self.lease_until >= now:
            return "held"
        return "failing" if self.attempts > 0 else "waiting"


@dataclass(frozen=True)
class Staged:
    """What a stage answers per job: the outbox row's id, or, staged outside a transaction (and
    published directly), ``published``: the enqueue's answer (the job's id, deduped, state)."""

    id: str
    published: EnqueueResult | None = None


@dataclass(frozen=True)
class OutboxHolder:
    """One live claim over unpublished rows: which relay, how many rows, until when."""

    relay: str
    token: str
    rows: int
    lease_until: datetime
    oldest_staged_at: datetime


@dataclass(frozen=True)
class RelayRecord:
    id: str
    started_at: datetime
    heartbeat_at: datetime


@dataclass(frozen=True)
class OutboxStats:
    """The driver's answer for the operator's view (engine.introspect.outbox projects it)."""

    backlog: int  # unpublished rows, counted up to the cap
    backlog_capped: bool  # True: the real number is >= backlog
    oldest_staged_at: datetime | None
    published_last_hour: int
    holders: tuple[OutboxHolder, ...]
    failing: tuple[OutboxRow, ...]
    relays: tuple[RelayRecord, ...]  # alive: heartbeat after the cut-off asked for


@dataclass(frozen=True)
class OutboxView:
    """The operator's view of the outbox: what `jobsctl outbox` prints and the console shows."""

    backlog: int  # unpublished rows (counted up to a cap: ``backlog_capped``)
    backlog_capped: bool
    oldest_unpublished_at: datetime | None
    oldest_unpublished_age: float | None  # seconds, on the caller's clock
    published_last_hour: int
    holders: tuple[OutboxHolder, ...]  # live claims: relay, rows, lease end
    failing: tuple[OutboxRow, ...]  # rows whose publish failed: attempts, last error
    relays: tuple[RelayRecord, ...]  # relays alive
    now: datetime
    published_capped: bool = False  # True: published_last_hour is the cap, the real number >= it


@dataclass(frozen=True)
class StagedWhy:
    """Why a staged row is (not yet) published, in one sentence, with the row it reads."""

    id: str
    status: OutboxStatus | Literal["lapsed"]
    text: str
    row: OutboxRow
