"""JSON values in and out: an input that does not serialise is refused before anything is written."""

from __future__ import annotations

import json
from typing import Any

from engine.errors import X_INPUT_NOT_JSON, JobsError


def dumps(value: Any, *, what: str = "input", job: str = "") -> str:
    try:
        return json.dumps(value, allow_nan=False, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        where = f" of job {job!r}" if job else ""
        raise JobsError(
            X_INPUT_NOT_JSON,
            cause=f"the {what}{where} is not a JSON value: {exc}",
            fix="pass only dict, list, str, int, float (finite), bool and None; convert dates with .isoformat()",
        ) from exc


def check_json(value: Any, *, what: str = "input", job: str = "") -> Any:
    """Validate and return a JSON-normalised copy (tuples become lists, as the database would)."""
    return json.loads(dumps(value, what=what, job=job))


def check_json_text(value: Any, *, what: str = "input", job: str = "") -> tuple[Any, str]:
    """check_json, and the JSON text too, so the driver writes it without dumping it again."""
    text = dumps(value, what=what, job=job)
    return json.loads(text), text


def loads(text: str | bytes | None) -> Any:
    return None if text is None else json.loads(text)
