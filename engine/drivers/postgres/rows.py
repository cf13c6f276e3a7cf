"""Row mapping for the Postgres driver: database rows to the frozen types of engine.types."""

from __future__ import annotations

from typing import Any

from engine.types import AttemptRecord, HistoryEntry, JobRow, JobState

_JOB_FIELDS = tuple(JobRow.__dataclass_fields__)


def job_row(d: dict[str, Any]) -> JobRow:
    kw = {k: d[k] for k in _JOB_FIELDS if k in d}
    kw["id"] = str(d["id"])
    kw["state"] = JobState(d["state"])
    return JobRow(**kw)


_STATE_AT = _JOB_FIELDS.index("state")


def job_rows_by_position(rows: list[tuple[Any, ...]]) -> list[JobRow]:
    """JobRows from tuples holding exactly JobRow's fields in order (worker_claim's RETURNING,
    the id already text): positional construction, the claim's hot path."""
    out = []
    for r in rows:
        v = list(r)
        v[_STATE_AT] = JobState(v[_STATE_AT])
        out.append(JobRow(*v))
    return out


def history_entry(d: dict[str, Any]) -> HistoryEntry:
    return HistoryEntry(str(d["job_id"]), d["at"], d["kind"], d["actor"], d["note"], d["data"] or {})


def attempt_record(d: dict[str, Any]) -> AttemptRecord:
    return AttemptRecord(
        str(d["job_id"]), d["run"], d["attempt"], d["worker"], d["started_at"], d["finished_at"],
        d["outcome"], d["error_code"], d["error"],
    )
