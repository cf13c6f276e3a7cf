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
_STATES = {s.value: s for s in JobState}
_new = object.__new__


def job_rows_by_position(rows: list[tuple[Any, ...]]) -> list[JobRow]:
    """JobRows from tuples holding exactly JobRow's fields in order (worker_claim's RETURNING,
    the id already text): the claim's hot path. The frozen dataclass's __init__ sets each of its
    23 fields through object.__setattr__ (~9 us a row); filling the instance's dict builds an
    equal row in a third of that (JobRow has no __post_init__ to skip)."""
    out = []
    for r in rows:
        row = _new(JobRow)
        d = row.__dict__
        d.update(zip(_JOB_FIELDS, r))
        d["state"] = _STATES[r[_STATE_AT]]
        out.append(row)
    return out


def history_entry(d: dict[str, Any]) -> HistoryEntry:
    return HistoryEntry(str(d["job_id"]), d["at"], d["kind"], d["actor"], d["note"], d["data"] or {})


def attempt_record(d: dict[str, Any]) -> AttemptRecord:
    return AttemptRecord(
        str(d["job_id"]), d["run"], d["attempt"], d["worker"], d["started_at"], d["finished_at"],
        d["outcome"], d["error_code"], d["error"],
    )
