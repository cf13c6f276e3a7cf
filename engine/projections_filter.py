"""Leaf module: the job filter (engine.projections re-exports it): what a list, a dead-letter view
or a bulk action matches, checked as it is made.

A frozen dataclass and its one sentinel, importing nothing of ours but engine.types and
engine.errors, as engine.projections.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from datetime import datetime
from typing import get_args

from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.types import JSON, JobState, StopReason

_JSON = json.JSONEncoder(allow_nan=False)  # a filter's input values: JSON's rules, as an input's


class Null(enum.Enum):
    """The value of a filter's ``error_code`` or ``stop_reason`` that matches the rows where that
    column is null: the dead-letter group of rows settled before every dead letter got a code (or
    written by hand). ``None`` leaves the field out (any value); ``NULL`` asks for none. Its value
    is the filter word that says it (``code=-``)."""

    NULL = "-"


NULL = Null.NULL


@dataclass(frozen=True)
class JobFilter:
    """What a list, a dead-letter view or a bulk action matches. Every field narrows (AND).

    ``input_fields``: top-level input keys and the JSON values they must contain, as jsonb's
    ``@>`` says (``input.invoice_id=42`` is ``(("invoice_id", 42),)`` and matches 42 or 42.0;
    ``input.tags=["a"]`` matches a list that holds "a"; an object matches by its keys). ``search``: a job id, or a prefix of
    the idempotency key. ``since``/``until``: created_at in [since, until). ``stop_reason``: why
    the job stopped (``terminal``, ``attempts-exhausted``): with name and code, a dead-letter group.
    ``error_code`` and ``stop_reason`` take ``NULL`` for the rows without one (a group's null
    column is that group, not every value: engine.introspect.filters.group_filter).
    """

    queue: str | None = None
    state: JobState | None = None
    name: str | None = None
    tenant: str | None = None
    error_code: str | Null | None = None
    input_fields: tuple[tuple[str, JSON], ...] = ()
    search: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    stop_reason: StopReason | Null | None = None

    def reads_what_changes(self) -> bool:
        """Whether this filter reads a field a live job changes (its state, its error code, its
        stop reason): a job that matches now may not have matched a moment ago."""
        return self.state is not None or self.error_code is not None or self.stop_reason is not None

    def __post_init__(self) -> None:
        # Each field's kind, refused here rather than failing (or matching nothing) deep in a driver.
        for key in ("queue", "name", "tenant", "error_code", "search"):
            v = getattr(self, key)
            if not (v is None or isinstance(v, str) or (v is NULL and key == "error_code")):
                kinds = "a str, NULL or None" if key == "error_code" else "a str or None"
                raise _refused(key, v, f"not {kinds}", f'JobFilter({key}="billing")')
        for key in ("since", "until"):
            if (v := getattr(self, key)) is not None and (not isinstance(v, datetime) or v.tzinfo is None):
                raise _refused(key, v, "not a datetime with a time zone", f"{key}=datetime(2026, 1, 1, tzinfo=UTC)")
        if self.input_fields != ():
            object.__setattr__(self, "input_fields", _json_pairs(self.input_fields))
        if (
            self.stop_reason is not None
            and self.stop_reason is not NULL
            and self.stop_reason not in get_args(StopReason)
        ):
            why = f"not a stop reason ({', '.join(get_args(StopReason))}) or NULL"
            raise _refused("stop_reason", self.stop_reason, why, 'JobFilter(stop_reason="terminal")')
        # A state given as its word ("dead") is that state; any other word is refused, the states named.
        if self.state is not None and not isinstance(self.state, JobState):
            if self.state not in JobState.__members__.values():
                raise _refused("state", self.state, f"not a state ({', '.join(JobState)})", 'JobFilter(state="dead")')
            object.__setattr__(self, "state", JobState(self.state))

    @property
    def empty(self) -> bool:
        return self == JobFilter()


def _refused(key: str, value: object, why: str, fix: str) -> JobsError:
    return JobsError(X_INVALID_ARGUMENT, cause=f"JobFilter({key}={value!r}): {why}", fix=fix)


def _json_pairs(fields: object) -> tuple[tuple[str, JSON], ...]:
    """(key, JSON value) pairs, each value as jsonb reads it back (a tuple a list, a key a str), so
    both drivers match the same; NaN, infinities and what is not JSON are refused. Text PostgreSQL
    cannot store (a NUL) is the tenant scope's to refuse (engine/introspect/filters.py: scoped)."""
    fix = "make_filter(input_fields={'invoice_id': 42})"
    if not isinstance(fields, tuple) or not all(
        isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in fields
    ):
        raise _refused("input_fields", fields, "not a tuple of (str, JSON value) pairs", fix)
    try:
        return tuple((k, json.loads(_JSON.encode(v))) for k, v in fields)
    except (TypeError, ValueError, RecursionError) as exc:
        raise _refused("input_fields", fields, f"holds a value that is not JSON ({exc})", fix) from None
