"""Turning data into safe, short text for the screen.

Everything that came from a job (input, result, errors, names, keys) passes through here. It comes
back as a rich ``Text`` (never markup, so ``[bold]`` in data stays literal) with every control
character replaced by a visible escape (so no terminal sequence from data reaches the terminal),
and truncated to a bound the screen can afford.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rich.cells import cell_len
from rich.text import Text

from engine.durations import relative  # jobsctl and the why texts say times the same way

# C0 controls except none (tab and newline are escaped too: a cell is one line), DEL, the C1
# range, and the bidi overrides that can reorder what a reader sees.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_MULTILINE_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_PASSWORD_KV = re.compile(r"(password\s*=\s*)('[^']*'|\S+)", re.IGNORECASE)
_PASSWORD_URL = re.compile(r"(://[^:/@\s]+):[^@\s]*@")

CELL_LIMIT = 60  # a table cell
LINE_LIMIT = 300  # one line of a detail panel
JSON_LINES = 30  # a JSON document folds past this many lines
JSON_LINE = 200  # one line of a JSON document (a long string is cut here)
JSON_CHARS = 20_000  # and is never rendered past this many characters


def _escape(match: re.Match[str]) -> str:
    ch = match.group(0)
    return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(
        ch, f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"
    )


def clean(value: object, *, limit: int = LINE_LIMIT, multiline: bool = False) -> str:
    """A plain string with control characters escaped and a length bound."""
    s = value if isinstance(value, str) else str(value)
    if len(s) > limit * 4:  # never run the regex over a megabyte to show sixty characters
        s = s[: limit * 4]
    s = (_MULTILINE_CONTROL if multiline else _CONTROL).sub(_escape, s)
    if len(s) > limit:
        s = s[: max(1, limit - 1)] + "…"
    return s


def safe(value: object, *, limit: int = LINE_LIMIT, style: str = "") -> Text:
    """Data as a one-line Text: escaped, bounded, never parsed as markup."""
    if value is None:
        return Text("—", style="dim")
    return Text(clean(value, limit=limit), style=style)


def cell(value: object, *, limit: int = CELL_LIMIT, style: str = "") -> Text:
    return safe(value, limit=limit, style=style)


_KV_PART = re.compile(r"(\w+)\s*=\s*('(?:[^'\\]|\\.)*'|\S*)")


def database_label(dsn: str) -> str:
    """``user@host:port/dbname`` from a DSN (URL or key=value), never its password: what the
    header names so the operator knows which database this is."""
    if "://" in dsn:
        from urllib.parse import urlsplit

        try:
            u = urlsplit(dsn)
            host, port, user = u.hostname or "localhost", u.port or 5432, u.username
        except ValueError:
            return redact_dsn(dsn)
        db = u.path.lstrip("/") or user or "?"
    else:
        parts = {k: v.strip("'") for k, v in _KV_PART.findall(dsn)}
        host, port, user = parts.get("host") or "localhost", parts.get("port") or 5432, parts.get("user")
        db = parts.get("dbname") or user or "?"
    return f"{user + '@' if user else ''}{host}:{port}/{db}"


def redact_dsn(text: str) -> str:
    """Belt and braces over the driver's own redaction: no password ever reaches the screen (I25)."""
    return _PASSWORD_URL.sub(r"\1:***@", _PASSWORD_KV.sub(r"\1***", text))


def another_terminal(dsn: str) -> list[Text]:
    """How another terminal's `jobsctl` reaches the database at ``dsn`` (the demo's), in parts for
    ``packed`` (with ``sep=" "``) to break between: a narrow screen breaks a key=value DSN between
    two of its keys, inside its quotes, where a shell keeps the line break and libpq reads it as
    the space it was, so the lines copied together still make the command."""
    command = f"JOBS_DSN={shlex.quote(redact_dsn(dsn))}".split(" ")
    return [
        Text("another terminal:", style="dim"),
        *(Text(part, style="bold") for part in command),
        Text("jobsctl queues"),
    ]


def looks_binary(s: str) -> bool:
    if not s:
        return False
    sample = s[:2000]
    bad = sum(1 for ch in sample if _CONTROL.match(ch) and ch not in "\n\t")
    return bad / len(sample) > 0.1


def pretty_json(value: Any, *, max_lines: int = JSON_LINES, unfold: bool = False) -> tuple[Text, int]:
    """Indented JSON, escaped; answers the text and how many lines were folded away."""
    if value is None:
        return Text("null", style="dim"), 0
    try:
        doc = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)
    except (TypeError, ValueError):
        doc = repr(value)
    if isinstance(value, str) and looks_binary(value):
        doc = json.dumps(value[: JSON_CHARS // 4])  # ensure_ascii: every byte shown as an escape
    total = len(doc)
    if total > JSON_CHARS:
        doc = doc[:JSON_CHARS]
    lines = doc.splitlines()
    folded = 0
    if not unfold and len(lines) > max_lines:
        folded = len(lines) - max_lines
        lines = lines[:max_lines]
    body = "\n".join(clean(line, limit=JSON_LINE, multiline=True) for line in lines)
    text = Text(body)
    if total > JSON_CHARS:
        text.append(f"\n… {total - JSON_CHARS:,} more characters not shown", style="dim italic")
    return text, folded


def relative_at(when: datetime | None, now: datetime) -> str:
    """``when`` said from ``now`` in the engine's one wording (engine.durations.relative, as
    jobsctl and the why texts say it): "3m20s ago", "in 2d23h", "in under a second"; "—" for none."""
    return "—" if when is None else relative((when - now).total_seconds())


def since(when: datetime | None, now: datetime) -> str:
    """A moment that has passed (a job's creation, a heartbeat) said from ``now`` as
    ``relative_at`` says it, but at ``now`` itself still behind: "under a second ago"."""
    return "—" if when is None else ago((now - when).total_seconds())


def ago(age: float) -> str:
    """An age in seconds (a heartbeat's) in the engine's wording: "5m13s ago", "under a second
    ago" (an age of zero too)."""
    return relative(-age)


def stamp(when: datetime | None, now: datetime | None = None) -> str:
    """A UTC time: HH:MM:SS today, else the date as well."""
    if when is None:
        return "—"
    if now is not None and when.date() == now.date():
        return when.strftime("%H:%M:%S")
    return when.strftime("%Y-%m-%d %H:%M")


def short_id(job_id: str) -> str:
    """The tail of a UUIDv7: its head is a timestamp that jobs enqueued together share."""
    return job_id[-12:] if len(job_id) > 12 else job_id


def packed(parts: Sequence[Text | str], width: int, *, sep: str = " · ", style: str = "") -> Text:
    """``parts`` joined by ``sep`` on as few lines of ``width`` cells as hold them, a line broken
    only between two parts: a hint ("s: sort") or a count ("dead 44") is never cut in two, as a
    terminal's own wrap cuts it at whatever space falls at the edge. A part wider than a line is
    left to that wrap; ``width`` 0 (not laid out yet) keeps them on one line."""
    out = Text(style=style)
    used = 0
    for i, part in enumerate(parts):
        text = part if isinstance(part, Text) else Text(part)
        if i and width > 0 and used + cell_len(sep) + text.cell_len > width:
            out.append("\n")
            used = 0
        elif i:
            out.append(sep, style="dim")
            used += cell_len(sep)
        out.append_text(text)
        used += text.cell_len
    return out
