"""JSON values in and out: an input that does not serialise is refused before anything is written.

The rules are the standard library's (`json.dumps(allow_nan=False)`): dict, list, tuple, str,
int, float (finite), bool and None; tuples become lists and int/float/bool/None keys become
strings, as the database would store them. orjson does the common case ~10x faster: a value made
only of dicts with str keys, lists, str, int, finite float, bool and None (checked by type, so
orjson's own extras, such as datetimes, UUIDs and dataclasses, are never accepted through it).
Anything else takes the standard library's path, and gets its answer and its errors.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from typing import Any

import orjson

from engine.errors import X_INPUT_NOT_JSON, X_INVALID_ARGUMENT, X_TOO_LARGE, JobsError
from engine.text import unstorable

_SCALARS = frozenset({str, int, bool, type(None)})
_DEPTH = 32  # deeper values take the standard library's path (its recursion limit applies there)
# orjson reads an integer past 64 bits as a float, silently: such text is the standard library's.
_LONG_INTEGER = re.compile(rb"[0-9]{19}")
_LONG_INTEGER_TEXT = re.compile(r"[0-9]{19}")
_ENCODER = json.JSONEncoder(allow_nan=False, separators=(",", ":"), ensure_ascii=False)


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` holds only what orjson and the standard library write alike."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is float:
        return value - value == 0.0  # finite: nan - nan and inf - inf are nan
    if depth >= _DEPTH:
        return False
    if kind is dict:
        for k, v in value.items():
            if type(k) is not str or not _plain(v, depth + 1):
                return False
        return True
    if kind is list:
        for v in value:
            if not _plain(v, depth + 1):
                return False
        return True
    return False


def _clashing_key(value: Any) -> str | None:
    """A key two of an object's keys both become as JSON text (1 and "1", True and "true"), which
    would leave the object one value short; None when there is none. Only the standard library's
    path writes keys that are not str, so only it can meet one (encoded already: no cycle)."""
    if isinstance(value, dict):
        if not all(type(k) is str for k in value):
            seen: set[str] = set()
            for k in value:
                text = k if isinstance(k, str) else _ENCODER.encode(k)
                if text in seen:
                    return text
                seen.add(text)
        items: Any = value.values()
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        return None
    for v in items:
        clash = _clashing_key(v)
        if clash is not None:
            return clash
    return None


def _fast(value: Any) -> bytes | None:
    if not _plain(value):
        return None
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:  # an integer past 64 bits, a str with a lone surrogate
        return None


def _standard(value: Any, what: str, job: str) -> str:
    where = f" of job {job!r}" if job else ""
    try:
        text = _ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise JobsError(
            X_INPUT_NOT_JSON,
            cause=f"the {what}{where} is not a JSON value: {exc}",
            fix="pass only dict, list, str, int, float (finite), bool and None; convert dates with .isoformat()",
        ) from exc
    clash = _clashing_key(value)
    if clash is not None:
        raise JobsError(
            X_INPUT_NOT_JSON,
            cause=f"the {what}{where} has two keys that are both {clash!r} as JSON text (a key that is "
            "not a str is written as its text): one value would be lost",
            fix="give each key of an object one spelling, as a str",
        )
    # orjson's path refuses a lone surrogate; the standard library writes it raw (ensure_ascii off).
    # The value itself is not shown: an input may hold what a log must not.
    why = None if text.isascii() else unstorable(text)
    if why is not None:
        raise JobsError(
            X_INPUT_NOT_JSON,
            cause=f"the {what}{where} holds {why} of its JSON text, which PostgreSQL cannot store",
            fix="replace lone surrogates first: text.encode('utf-8', 'replace').decode('utf-8')",
        )
    return text


# A NUL character is valid JSON (written \u0000) that PostgreSQL's jsonb refuses: an escape
# preceded by an even number of backslashes (an odd number makes it a literal "\u0000" text).
_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


# The largest JSON text (in UTF-8 bytes) stored as an input, result, step result or event payload:
# JOBS_MAX_JSON_BYTES in the environment, or set_max_json_bytes(); past it, X_TOO_LARGE. A row
# that size is read back by every claim, console page and `jobsctl show`: data that big belongs
# elsewhere, referenced by the job.
DEFAULT_MAX_JSON_BYTES = 1 << 20
_max_json_bytes: list[int] = []  # set on first use (the environment's), or by set_max_json_bytes


def set_max_json_bytes(limit: int) -> None:
    """The process's size limit for every JSON value the engine stores (bytes of JSON text)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"max_json_bytes={limit!r} must be a whole number of bytes >= 1",
            fix=f"set_max_json_bytes({DEFAULT_MAX_JSON_BYTES})",
        )
    _max_json_bytes[:] = [limit]


def max_json_bytes() -> int:
    if not _max_json_bytes:
        raw = os.environ.get("JOBS_MAX_JSON_BYTES", "").strip()
        try:
            limit = int(raw) if raw else DEFAULT_MAX_JSON_BYTES
        except ValueError:
            limit = 0
        if limit < 1:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"JOBS_MAX_JSON_BYTES={raw!r} must be a whole number of bytes >= 1",
                fix=f"export JOBS_MAX_JSON_BYTES={DEFAULT_MAX_JSON_BYTES}",
            )
        _max_json_bytes[:] = [limit]
    return _max_json_bytes[0]


def _storable(text: str, what: str, job: str) -> str:
    limit = max_json_bytes()
    if len(text) * 4 > limit:  # a UTF-8 character is at most 4 bytes: shorter text cannot be over
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > limit:
            where = f" of job {job!r}" if job else ""
            raise JobsError(
                X_TOO_LARGE,
                cause=f"the {what}{where} is {size:,} bytes of JSON, over the limit of {limit:,} bytes",
                fix=f"export JOBS_MAX_JSON_BYTES={1 << (size - 1).bit_length()}",
            )
    if "\\u0000" in text and _NUL.search(text):
        where = f" of job {job!r}" if job else ""
        raise JobsError(
            X_INPUT_NOT_JSON,
            cause=f"the {what}{where} holds a NUL character (\\u0000), which PostgreSQL's jsonb cannot store",
            fix="drop or replace NUL characters first: value.replace('\\x00', '')",
        )
    return text


def dumps(value: Any, *, what: str = "input", job: str = "") -> str:
    fast = _fast(value)
    return _storable(fast.decode() if fast is not None else _standard(value, what, job), what, job)


def check_json(value: Any, *, what: str = "input", job: str = "") -> Any:
    """Validate and return a JSON-normalised copy (tuples become lists, as the database would)."""
    return check_json_text(value, what=what, job=job)[0]


def check_json_text(value: Any, *, what: str = "input", job: str = "") -> tuple[Any, str]:
    """check_json, and the JSON text too, so the driver writes it without dumping it again."""
    fast = _fast(value)
    if fast is not None:
        text = _storable(fast.decode(), what, job)
        return orjson.loads(fast), text  # a plain value reads back as an equal copy
    text = _storable(_standard(value, what, job), what, job)
    return json.loads(text), text


def loads(text: str | bytes | bytearray | memoryview | None) -> Any:
    """A JSON value from its text (the database's jsonb output included)."""
    if text is None:
        return None
    if isinstance(text, memoryview):
        text = bytes(text)
    long_integer = _LONG_INTEGER_TEXT if isinstance(text, str) else _LONG_INTEGER
    if long_integer.search(text) is not None:  # type: ignore[arg-type]
        return json.loads(text)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # what orjson refuses and json reads (a lone surrogate escape)
        return json.loads(text)


def orjson_default(value: Any) -> str:
    """orjson's ``default=`` for the values it refuses that the engine writes: a datetime subclass
    (freezegun's FakeDatetime, pendulum's DateTime), as ISO text. orjson writes plain datetimes."""
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
