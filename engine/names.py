"""The rule for a name the operator types back (a job's, a task's, a queue's, a worker's id): a
non-empty str of at most MAX_NAME characters, with no space at either end, that PostgreSQL can
store, with no control or direction character. A queue's name holds no comma either: `jobsctl
worker --queues a,b` splits on commas, so such a queue could never be served from the CLI."""

from __future__ import annotations

import re

from engine.errors import X_INVALID_DEFINITION, JobsError
from engine.text import MAX_NAME, check_text

# Control characters (a tab, a newline, an escape) and the bidi marks that reorder what a reader sees.
_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def check_name(value: object, what: str, fix: str, *, code: str = X_INVALID_DEFINITION) -> str:
    """A job's, task's or queue's name: a non-empty str of at most MAX_NAME characters, with no
    space at either end (the operator's commands strip what they are given, so ' q ' could never
    be named there), that PostgreSQL can store, with no control character. Returns it. ``code``:
    the error's (a declaration's by default)."""
    if not isinstance(value, str) or not value or value != value.strip() or len(value) > MAX_NAME:
        shown = repr(value) if not isinstance(value, str) or len(value) <= 60 else f"{value[:60]!r}..."
        raise JobsError(
            code,
            cause=f"{what} {shown}: it must be a non-empty string of at most {MAX_NAME} characters, "
            "with no space at either end"
            + (f" ({len(value)} characters)" if isinstance(value, str) and len(value) > 60 else ""),
            fix=fix,
        )
    check_text(value, what=what, fix=fix, code=code)
    if (hidden := _HIDDEN.search(value)) is not None:  # a terminal, a log or a shell would not show it as written
        why = f"holds {ascii(hidden.group())} at position {hidden.start()}, a control or direction character"
        raise JobsError(code, cause=f"{what} {ascii(value)[:80]} {why}", fix=fix)
    return value


def check_queue_name(value: object, what: str, fix: str) -> str:
    """A queue's name: check_name's rule, and no comma (`jobsctl worker --queues` splits on them)."""
    name = check_name(value, what, fix)
    if "," in name:
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"{what} {ascii(name)[:80]} holds a comma: `jobsctl worker --queues a,b` splits on commas, "
            "so no worker started from the CLI could serve it",
            fix=fix,
        )
    return name
