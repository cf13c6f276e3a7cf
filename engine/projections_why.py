"""Leaf module: the why projections (engine.projections re-exports them): a cause, as data,
of a job's state or of a queue's waiting jobs, and the report that lists them.

Frozen dataclasses only, importing nothing of ours but engine.types, as engine.projections.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from engine.types import JobState, StopReason


@dataclass(frozen=True)
class SlotHolder:
    """One slot row of a concurrency key; ``state`` and ``started_at`` are its holder job's (its
    state now, and when its current claim began), None when the slot is free or the job is gone."""

    job_id: str | None
    worker: str | None
    lease_until: datetime | None
    state: JobState | None = None
    started_at: datetime | None = None


@dataclass(frozen=True)
class WaitGroup:
    """Jobs of one queue that are not claimable now, grouped by what they wait for: ``kind`` is
    delay (delayed), sleep, event or jobs (suspended), rate or concurrency (parked by that limit),
    unknown (parked by a worker whose release does not declare the job);
    ``key`` the event's name or the limit's key; ``next_at`` the earliest run_at among them."""

    state: JobState
    kind: str
    key: str | None
    count: int
    next_at: datetime


@dataclass(frozen=True)
class Cause:
    """One reason, as data. ``kind`` says which fields matter:

    delayed (until), paused (by, at, note), slots (key, holders, limit), rate_limit (key, tokens,
    refill_at, at = when the tokens were counted), limit (limit_kind, key, until = next try),
    unknown (worker = the one that parked it, until = next try), sleep (until), event (event,
    match, until = the wait's timeout or None, next_check = when the job looks for it again), jobs
    (a step's wait for other jobs: count = how many, until and next_check as an event wait's),
    awaited (a suspended fan-in waits for this job: job_id = that fan-in, state, count = how many
    jobs it waits for),
    stale_worker (worker, heartbeat_at), no_worker (queue), duplicate
    (job_id, state), running (worker, until = lease end), dead (code, stop_reason, attempt,
    max_attempts, fix), finished (state, at), ready (nothing is wrong: it is next for a worker),
    backlog (count, workers), waiting (a parked job: since when it has waited, in the text; the
    queue's oldest waiting age, of its ready and parked jobs alike, counts from the same time),
    clear (a queue nothing holds back).
    A queue's delayed, sleep, event, jobs, limit and unknown causes carry ``count`` (how many jobs) and ``until``
    (the first of them to run again).

    ``fix``: what to do about it, when the cause says (a dead job's: the fix its last error
    recorded, else the next step, a `jobsctl` command); the text ends with the same words.
    """

    kind: str
    text: str  # the plain sentence the console shows
    queue: str | None = None
    until: datetime | None = None
    at: datetime | None = None
    by: str | None = None
    note: str | None = None
    key: str | None = None
    limit: int | None = None
    holders: tuple[SlotHolder, ...] = ()
    tokens: float | None = None
    refill_at: datetime | None = None
    event: str | None = None
    match: dict[str, Any] | None = None
    worker: str | None = None
    heartbeat_at: datetime | None = None
    job_id: str | None = None
    state: JobState | None = None
    code: str | None = None
    stop_reason: StopReason | None = None
    attempt: int | None = None
    max_attempts: int | None = None
    count: int | None = None
    limit_kind: str | None = None  # rate | concurrency
    next_check: datetime | None = None
    fix: str | None = None


@dataclass(frozen=True)
class WhyReport:
    """Why a job is in its state now, or why a queue's oldest waiting age (its ready and parked
    jobs': a parked job waits too) grows."""

    subject: Literal["job", "queue"]
    target: str  # job id or queue name
    state: JobState | None  # the job's state (None for a queue)
    causes: tuple[Cause, ...]
    at: datetime

    @property
    def summary(self) -> str:
        return " ".join(c.text for c in self.causes) if self.causes else "nothing is holding it back."
