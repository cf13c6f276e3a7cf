"""The backfill projections the CLI and the console read: plain frozen dataclasses."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from engine.records import BackfillRun

Status = Literal["pending", "running", "completed", "failed", "stalled"]


@dataclass(frozen=True)
class Gate:
    """The refusal a start would meet now: its code, cause and fix."""

    code: str
    cause: str
    fix: str


@dataclass(frozen=True)
class Progress:
    """A pass's live progress. ``remaining`` is count() at its start less what it swept."""

    run_id: str
    job_id: str | None
    dry_run: bool
    status: str
    swept: int
    batches: int
    planned: int | None
    remaining: int | None
    batches_per_second: float | None
    rows_per_second: float | None
    eta_seconds: float | None
    started_at: datetime


@dataclass(frozen=True)
class BackfillView:
    """One declared backfill in one environment."""

    name: str
    environment: str
    status: Status
    applies: bool  # the environment is in its declared list (an empty list: every one)
    environments: tuple[str, ...]
    requires: str | None
    batch_size: int
    rate: float | None
    live_job_id: str | None
    applied: BackfillRun | None  # its latest completed write pass here
    last: BackfillRun | None  # its latest pass here, of any outcome
    progress: Progress | None  # the live pass's, or the last one's
    gate: Gate | None  # what would refuse a write pass now (None: it would start)


@dataclass(frozen=True)
class Started:
    """A pass enqueued: its ledger row and its job."""

    name: str
    run_id: str
    job_id: str
    environment: str
    dry_run: bool
    forced: bool
