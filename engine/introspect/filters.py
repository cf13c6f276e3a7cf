"""Building and checking a JobFilter: from keywords (the console), from `key=value` words (the
CLI's --filter, the console's filter bar) or from a dead-letter group. Bad input is refused here,
before any query runs."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.durations import parse_duration
from engine.errors import X_INVALID_ARGUMENT, X_TENANT_MISMATCH, X_UNKNOWN_STATE, JobsError, unknown_option
from engine.projections import NULL, DeadGroup, JobFilter, Null
from engine.text import check_text, check_texts
from engine.types import JobState

FILTER_KEYS = ("queue", "state", "name", "tenant", "code", "error_code", "stop", "search", "since", "until")
# The filter words that name a JobFilter field by another name, both ways.
_FIELD_OF = {"code": "error_code", "stop": "stop_reason"}
_WORD_OF = {field: word for word, field in _FIELD_OF.items()}
# `code=-`, `stop=-`: the rows without a code or a stop reason (JobFilter's NULL); `code=` is any code.
_NULL_WORD = NULL.value
_STATES = ", ".join(s.value for s in JobState)


def parse_state(value: str | JobState | None) -> JobState | None:
    if value is None or isinstance(value, JobState):
        return value
    try:
        return JobState(str(value).strip().lower())
    except ValueError:
        raise JobsError(
            X_UNKNOWN_STATE,
            cause=f"there is no job state {value!r}; states are {_STATES}",
            fix="jobsctl ls --filter state=dead",
        ) from None


def _time(key: str, value: str) -> datetime:
    """An ISO time with its zone, or a duration back from now (``since=1h``: the last hour)."""
    if _AGO.match(value):
        try:
            return datetime.now(UTC) - timedelta(seconds=parse_duration(value, key))
        except OverflowError:  # back before the year 1
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"{key}={value} reaches back before the year 1",
                fix=f"jobsctl ls --filter {key}=30d",
            ) from None
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        dt = None
    if dt is None or dt.tzinfo is None:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"{key}={value!r} is neither an ISO time with a zone nor a duration back from now (1h, 30m)",
            fix=f"jobsctl ls --filter {key}=1h",
        )
    return dt


_AGO = re.compile(r"^\d+(?:\.\d+)?(ms|s|m|h|d)$")


def _json_value(raw: str) -> Any:
    # input.invoice_id=42 means the number 42; input.sku=ab-1 the string (not valid JSON).
    try:
        return json.loads(raw)
    except ValueError:
        return raw
    except RecursionError:  # nested deeper than the parser goes: no job's input holds it either
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"the filter's input value is JSON nested too deep to read ({len(raw):,} characters)",
            fix="jobsctl ls --filter input.invoice_id=42",
        ) from None


_KEYWORDS = (
    "queue",
    "state",
    "name",
    "tenant",
    "error_code",
    "input_fields",
    "search",
    "since",
    "until",
    "stop_reason",
)


def make_filter(
    *,
    queue: str | None = None,
    state: str | JobState | None = None,
    name: str | None = None,
    tenant: str | None = None,
    error_code: str | Null | None = None,
    input_fields: dict[str, Any] | None = None,
    search: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    stop_reason: str | Null | None = None,
    **unknown: Any,
) -> JobFilter:
    """A checked JobFilter from keywords; empty strings mean 'not filtered', and "-" as a code or
    a stop reason means the rows without one (NULL)."""
    if unknown:
        raise unknown_option(
            "make_filter takes no filter", unknown, _KEYWORDS, "make_filter({option}=...)", "state", X_INVALID_ARGUMENT
        )
    for label, dt in (("since", since), ("until", until)):
        if dt is not None and (not isinstance(dt, datetime) or dt.tzinfo is None):
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"{label}={dt!r} is not a datetime with a time zone",
                fix=f"{label}=datetime(2026, 1, 1, tzinfo=UTC)",
            )
    if since is not None and until is not None and until <= since:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"until ({until.isoformat()}) is not after since ({since.isoformat()})",
            fix="swap since and until",
        )
    if input_fields is not None and not isinstance(input_fields, dict):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"input_fields={input_fields!r} is not a dict of input keys and the values they hold",
            fix="make_filter(input_fields={'invoice_id': 42})",
        )
    for k in input_fields or {}:
        if not isinstance(k, str) or not k or "." in k:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"input field {k!r} must be one top-level key",
                fix="jobsctl ls --filter input.invoice_id=42",
            )
    fields = tuple(sorted((input_fields or {}).items()))
    return JobFilter(
        queue=_unset_if_empty(queue),
        state=parse_state(_unset_if_empty(state)),
        name=_unset_if_empty(name),
        tenant=_unset_if_empty(tenant),
        error_code=_null_if_dash(_unset_if_empty(error_code)),
        input_fields=fields,
        search=(search.strip() or None) if isinstance(search, str) else search,  # JobFilter refuses a non-str
        since=since,
        until=until,
        stop_reason=_null_if_dash(_unset_if_empty(stop_reason)),  # JobFilter refuses any other word
    )


def _unset_if_empty(value: Any) -> Any:
    """ "" is 'not filtered'; anything else but a str (0, [], False) is passed on for JobFilter to
    refuse, never read as 'not filtered' (a bulk action would then match everything)."""
    return None if value == "" else value


def _null_if_dash(value: Any) -> Any:
    return NULL if value == _NULL_WORD else value


def parse_filter(text: str | list[str] | tuple[str, ...] | None) -> JobFilter:
    """``"queue=emails state=dead code=X_SMTP input.invoice_id=42 tenant=acme search=inv:"``."""
    if not text:
        return JobFilter()
    # A string is split like a shell line; a list (repeated --filter options) is taken word by
    # word as the shell already split it, so input.sku="42" keeps its quotes (the string "42").
    words = (
        shlex.split(text)
        if isinstance(text, str)
        else [w for part in text for w in ([part] if "=" in part else part.split())]
    )
    kw: dict[str, Any] = {}
    fields: dict[str, Any] = {}
    seen: dict[str, str] = {}
    for word in words:
        key, sep, value = word.partition("=")
        key = key.strip().lower()
        if not sep or not key:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"filter word {word!r} is not key=value",
                fix="jobsctl ls --filter state=dead --filter queue=emails",
            )
        # A key given twice with two values would keep only the last: a filter is one value a key.
        field = _FIELD_OF.get(key, key)
        if seen.get(field, value) != value:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"filter key {key!r} is given twice ({seen[field]!r} and {value!r}); a filter takes one value a key",
                fix=f"jobsctl ls --filter {key}={value}",
            )
        seen[field] = value
        if key.startswith("input."):
            fields[key.removeprefix("input.")] = _json_value(value)
        elif key in ("since", "until"):
            kw[key] = _time(key, value)
        elif key in FILTER_KEYS:
            kw[_FIELD_OF.get(key, key)] = value
        else:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"unknown filter key {key!r}; keys are {', '.join(FILTER_KEYS)}, input.FIELD",
                fix="jobsctl ls --filter state=dead",
            )
    return make_filter(input_fields=fields, **kw)


def scoped(where: JobFilter, tenant: str | None) -> JobFilter:
    """Narrow a filter to a tenant scope (I25): a filter naming another tenant is refused. Every
    read and bulk action passes here, so a filter's text PostgreSQL cannot store is refused here."""
    for key in ("queue", "name", "tenant", "error_code", "search"):
        check_text(getattr(where, key), what=f"the filter's {key}", fix="jobsctl ls --filter state=dead")
    for field, value in where.input_fields:
        check_text(field, what="the filter's input field", fix="jobsctl ls --filter input.invoice_id=42")
        check_texts(value, what=f"the filter's input.{field}", fix="jobsctl ls --filter input.invoice_id=42")
    if tenant is None:
        return where
    if where.tenant is not None and where.tenant != tenant:
        raise JobsError(
            X_TENANT_MISMATCH,
            cause=f"the filter names tenant {where.tenant!r} outside this scope ({tenant!r})",
            fix=f"--filter tenant={tenant}",
        )
    return replace(where, tenant=tenant)


def describe_filter(where: JobFilter) -> str:
    """The filter as the words parse_filter reads back (for a confirmation prompt and the audit)."""
    out: list[str] = []
    for key in ("queue", "state", "name", "tenant", "error_code", "stop_reason", "search"):
        v = getattr(where, key)
        if v is not None:
            out.append(f"{_WORD_OF.get(key, key)}={v.value if isinstance(v, (JobState, Null)) else v}")
    out += [f"input.{k}={json.dumps(v)}" for k, v in where.input_fields]
    out += [f"{k}={getattr(where, k).isoformat()}" for k in ("since", "until") if getattr(where, k) is not None]
    return " ".join(shlex.quote(w) for w in out) or "(everything)"


def filter_options(where: JobFilter) -> str:
    """``where`` as jobsctl's --filter options, one a word (the words parse_filter reads back), for a
    fix line that keeps every word of the operator's filter; empty for the empty filter."""
    if where == JobFilter():
        return ""
    return " ".join(f"--filter {shlex.quote(w)}" for w in shlex.split(describe_filter(where)))


def group_filter(where: JobFilter, group: DeadGroup) -> JobFilter:
    """``where`` narrowed to one dead-letter group: its job name, error code and stop reason. A
    group's null code or stop reason is NULL here (the rows without one), never None, which would
    leave the field out and reach the dead letters of every other code too."""
    return replace(
        where,
        name=group.name,
        error_code=NULL if group.error_code is None else group.error_code,
        stop_reason=NULL if group.stop_reason is None else group.stop_reason,
    )
