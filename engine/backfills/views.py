"""The backfill projections the CLI and the console read: plain frozen dataclasses."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from engine.records import BackfillRun

Status = Literal["pending", "running", "completed", "failed", "stalled", "not declared"]


def status_here(
    applies: bool, live_job_id: str | None, applied: BackfillRun | None, last: BackfillRun | None
) -> Status:
    """A backfill's status in one environment, from that environment's ledger rows. One live pass
    per name holds across environments (its job's key is the name), so it is "running" only where
    the live pass is that environment's own (its latest ledger row names the live job); elsewhere
    that pass is the gate a start meets (X_BACKFILL_RUNNING), and the status is the ledger's."""
    if not applies:
        return "not declared"
    if live_job_id is not None and last is not None and last.job_id == live_job_id:
        return "running"
    if applied is not None:
        return "completed"
    if last is not None and last.status in ("failed", "stalled"):
        return last.status  # type: ignore[return-value]
    return "pending"


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
    status: Status  # status_here: in this environment
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
