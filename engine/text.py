"""The one rule for text PostgreSQL can store, in a text column or in jsonb alike: no NUL
character, and valid UTF-8, so no lone surrogate (which Python makes of bytes it could not
decode: in argv, or a file read with errors='surrogateescape').

The engine checks it where text enters (a declaration, an enqueue, an event, a step, a filter, an
action's note), before any driver sees the text, so the memory driver refuses what PostgreSQL
would and nothing is written. JSON values (inputs, results, payloads) are checked by
engine.codec, on the same rule. Text the engine writes but did not choose, an exception's message
and traceback, is escaped instead (``storable``): refusing it would lose the failure it reports.
"""

from __future__ import annotations

import re
from typing import Any

from engine.errors import X_INVALID_ARGUMENT, JobsError


def unstorable(text: str) -> str | None:
    """None when PostgreSQL can store ``text``, else what breaks the rule and where."""
    nul = text.find("\x00")
    if nul >= 0:
        return f"a NUL character (\\x00) at position {nul}"
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"a lone surrogate ({ascii(text[exc.start])[1:-1]}) at position {exc.start}"
    return None


def check_text(value: Any, *, what: str, fix: str, code: str = X_INVALID_ARGUMENT) -> None:
    """Refuse a str PostgreSQL cannot store; anything not a str is the caller's to check."""
    if isinstance(value, str):
        why = unstorable(value)
        if why is not None:
            shown = ascii(value) if len(value) <= 60 else ascii(value[:60]) + "..."
            raise JobsError(code, cause=f"{what} {shown} holds {why}, which PostgreSQL cannot store", fix=fix)


NOTE_MAX = 500  # characters an action's note keeps in the audit trail


def check_note(note: Any, *, what: str, fix: str) -> None:
    """Refuse an action's note that is not a str (or None), longer than NOTE_MAX characters, or
    that PostgreSQL cannot store, before the action changes anything; ``fix`` says how its caller
    gives a note."""
    if note is not None and not isinstance(note, str):
        raise JobsError(X_INVALID_ARGUMENT, cause=f"the {what} note={note!r} is not a str or None", fix=fix)
    if note is not None and len(note) > NOTE_MAX:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"the {what} note is {len(note)} characters; the audit trail keeps a note of at most {NOTE_MAX}",
            fix=fix,
        )
    check_text(note, what=f"the {what} note", fix=fix)


def check_texts(value: Any, *, what: str, fix: str, code: str = X_INVALID_ARGUMENT) -> None:
    """``check_text`` on every str in a JSON-like value (dict keys included)."""
    if isinstance(value, str):
        check_text(value, what=what, fix=fix, code=code)
    elif isinstance(value, dict):
        for k, v in value.items():
            check_text(k, what=what, fix=fix, code=code)
            check_texts(v, what=what, fix=fix, code=code)
    elif isinstance(value, (list, tuple)):
        for v in value:
            check_texts(v, what=what, fix=fix, code=code)


# C0 controls but tab and newline, DEL, the C1 range, lone surrogates, and the bidi overrides that
# can reorder what a reader sees.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escaped(match: re.Match[str]) -> str:
    ch = match.group(0)
    return "\\r" if ch == "\r" else f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(text: str) -> str:
    """``text`` as PostgreSQL can store it: each NUL and lone surrogate escaped as ``printable``
    shows it (``\\x00``, ``\\udc80``), the rest as it is. What the engine writes of text it did
    not choose and must not refuse: an exception's message, its traceback, its fix."""
    return _UNSTORABLE.sub(_escaped, text)


def printable(text: str) -> str:
    """``text`` for a terminal: every control character but tab and newline, every bidi override
    and lone surrogate shown as an escape (``\\x1b``, ``\\u202e``), so no sequence that came with
    the data (a job's name, tenant, error, a note) reaches the terminal. What the CLI prints."""
    return _UNPRINTABLE.sub(_escaped, text)


# A name (a job's, a task's, a queue's, a step's, an event's) and a tenant are columns PostgreSQL
# indexes, and the dedupe index holds (name, tenant, key) in one entry, capped at 2,704 bytes: a
# name and a tenant of at most 200 characters (800 bytes of UTF-8 each) and a key of at most
# 1,000 bytes always fit.
MAX_NAME = 200
MAX_TENANT = MAX_NAME
MAX_KEY_BYTES = 1000
TENANT_FIX = "tenant='acme'"


def check_tenant(tenant: Any) -> None:
    """A tenant as every door takes it (an enqueue, an event, a read's or an action's scope):
    None, or a non-empty string of at most MAX_TENANT characters PostgreSQL can store, with no
    space around it (a tenant ' acme' would be a namespace no one could name)."""
    if tenant is None:
        return
    if not isinstance(tenant, str) or not tenant or tenant != tenant.strip() or len(tenant) > MAX_TENANT:
        shown = repr(tenant) if not isinstance(tenant, str) or len(tenant) <= 60 else repr(tenant[:60]) + "..."
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"tenant={shown} must be a non-empty string of at most {MAX_TENANT} characters, "
            "with no space around it, or None",
            fix=TENANT_FIX,
        )
    check_text(tenant, what="tenant", fix=TENANT_FIX)


def check_key_size(key: str, job: str) -> None:
    """An idempotency key PostgreSQL's indexes can hold: at most MAX_KEY_BYTES of UTF-8."""
    if len(key) * 4 > MAX_KEY_BYTES and len(key.encode()) > MAX_KEY_BYTES:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"the idempotency key of job {job!r} is {len(key.encode()):,} bytes; a key holds at most "
            f"{MAX_KEY_BYTES:,} (an index entry's limit)",
            fix=f"@job(name={job!r}, idempotency_key=lambda inp: hashlib.sha256(KEY.encode()).hexdigest())",
        )
