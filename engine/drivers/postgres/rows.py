"""Row mapping for the Postgres driver: database rows to the frozen types of engine.types."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from engine.types import AttemptRecord, HistoryEntry, JobRow, JobState

_JOB_FIELDS = tuple(JobRow.__dataclass_fields__)


def job_row(d: dict[str, Any]) -> JobRow:
    kw = {k: d[k] for k in _JOB_FIELDS if k in d}
    kw["id"] = str(d["id"])
    kw["state"] = JobState(d["state"])
    return JobRow(**kw)


# What worker_claim answers, in this order: the fields the claim did not set. The ones it did
# (state, claimant, claimed/updated at, lease end) and the ones it cleared are known to the
# caller, so the server neither formats them nor does the driver decode them (200 rows a claim).
CLAIM_FIELDS = (
    "id",
    "name",
    "queue",
    "tenant",
    "idempotency_key",
    "input",
    "priority",
    "attempt",
    "max_attempts",
    "run",
    "run_at",
    "created_at",
    "last_error",
    "error_code",
    "wait",
    "waiting_since",
)
_new = object.__new__


def claimed_rows(rows: list[tuple[Any, ...]], *, worker: str, now: datetime, lease_until: datetime) -> list[JobRow]:
    """JobRows from worker_claim's tuples: the claim's hot path. The frozen dataclass's __init__
    sets each of JobRow's 23 fields through object.__setattr__ (~6 us a row); filling the
    instance's dict (in field order: the template first) builds an equal row in a third of that
    (JobRow has no __post_init__ to skip)."""
    template = dict.fromkeys(_JOB_FIELDS)
    template.update(state=JobState.RUNNING, claimed_by=worker, claimed_at=now, updated_at=now, lease_until=lease_until)
    out = []
    for r in rows:
        row = _new(JobRow)
        d = row.__dict__
        d.update(template)
        d.update(zip(CLAIM_FIELDS, r))
        out.append(row)
    return out


def history_entry(d: dict[str, Any]) -> HistoryEntry:
    return HistoryEntry(str(d["job_id"]), d["at"], d["kind"], d["actor"], d["note"], d["data"] or {})


def attempt_record(d: dict[str, Any]) -> AttemptRecord:
    return AttemptRecord(
        str(d["job_id"]),
        d["run"],
        d["attempt"],
        d["worker"],
        d["started_at"],
        d["finished_at"],
        d["outcome"],
        d["error_code"],
        d["error"],
        d["traceback"],
    )
