"""DSNs for the Postgres driver: checked and normalised, shown without a password, given the
engine's timeouts, and the error for a database that cannot be reached."""

from __future__ import annotations

import re
import shlex
from typing import Any

import psycopg
from psycopg import conninfo as ci

from engine.drivers.transient import condition_of, first_line
from engine.errors import X_DB_UNREACHABLE, X_DSN_INVALID, X_NOT_IMPLEMENTED, ConnectionLost, JobsError

# What names a database: all a message needs to say which one, and all it shows of a DSN.
_TARGET = ("service", "user", "host", "hostaddr", "port", "dbname")


def safe_dsn(dsn: str) -> str:
    """The database a DSN names (its service, user, host, port, dbname), what may be shown on
    screen or in a log: never its password (I25), nor an option the engine or the CLI added to it
    (connect_timeout, a statement_timeout in options) that the reader did not write."""
    try:
        parts = ci.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<unparseable dsn>"
    return ci.make_conninfo("", **{k: parts[k] for k in _TARGET if parts.get(k) is not None})


ENV_DSN = '"$JOBS_DSN"'  # how an engine's fix names the database: it cannot know where its DSN came from


def naming_dsn(fix: str, given: str) -> str:
    """``fix`` with ``given``, a DSN the user typed (--dsn), where it says "$JOBS_DSN": the
    database the error's cause names, which $JOBS_DSN may not be (a fix run as printed would then
    migrate, or query, another database)."""
    if ENV_DSN not in fix or given.strip().startswith("memory:"):
        return fix
    return fix.replace(ENV_DSN, shlex.quote(shown_dsn(given)))


def shown_dsn(dsn: str) -> str:
    """``dsn`` as a fix may show it: its safe form (safe_dsn) when that is all of it; that with
    the placeholder PASSWORD when its password is all safe_dsn leaves out; else the placeholder
    DSN (the settings safe_dsn leaves out would be lost), beside a cause that names the database."""
    safe = safe_dsn(dsn)
    try:
        left_out = {k for k, v in ci.conninfo_to_dict(dsn).items() if v is not None} - set(ci.conninfo_to_dict(safe))
    except psycopg.ProgrammingError:
        return "DSN"
    if not left_out:
        return safe
    return f"{safe} password=PASSWORD" if left_out == {"password"} else "DSN"


def describe_target(dsn: str) -> str:
    try:
        parts = ci.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<unparseable dsn>"
    host = parts.get("host") or "localhost"
    port = parts.get("port") or "5432"
    return f"database {parts.get('dbname') or parts.get('user') or '?'} on {host}:{port}"


def refuse_other_storage(dsn: str) -> None:
    """A URL naming another storage (redis://, nats://, mysql://) is X_NOT_IMPLEMENTED, naming
    what is supported, rather than a DSN psycopg cannot parse."""
    scheme, sep, _ = dsn.strip().partition("://")
    scheme = scheme.lower()
    if sep and scheme and not scheme.startswith("postgres") and scheme.replace("+", "").isalnum():
        raise JobsError(
            X_NOT_IMPLEMENTED,
            cause=f"{scheme}:// names a storage the engine does not implement: jobs live in PostgreSQL "
            "(postgresql://, postgres:// or key=value) or, for tests and demos, in memory (memory://)",
            fix="export JOBS_DSN=postgresql://USER@HOST:5432/DBNAME",
        )


_KV_PORT = re.compile(r"(?:^|\s)port\s*=\s*('[^']*'|\S*)")
DSN_FIX = 'connect("postgresql://USER@HOST:5432/DBNAME")'
# Seconds a connection attempt may wait for the server when the DSN names no connect_timeout:
# libpq's default is to wait forever (psycopg's async connect, 130 s), which a frozen server turns
# into a hang. Whole seconds, at least 2 (libpq's own floor).
DEFAULT_CONNECT_TIMEOUT = 10


def _ports(dsn: str) -> list[str]:
    if "://" in dsn:
        netloc = dsn.split("://", 1)[1].split("/", 1)[0].split("?", 1)[0].rsplit("@", 1)[-1]
        ports = [h.rsplit(":", 1)[1] for h in netloc.split(",") if ":" in h and not h.endswith("]")]
        ports += re.findall(r"[?&]port=([^&]*)", dsn)
    else:
        ports = [m.strip("'") for m in _KV_PORT.findall(dsn)]
    return [p for group in ports for p in group.split(",")]


def check_dsn(dsn: str) -> str:
    """Normalise a DSN (URL or key=value); a malformed one is X_DSN_INVALID, password unshown.
    A port that is not a port number is malformed too: libpq parses ``port=notaport`` happily
    and fails only when connecting (after a DNS lookup), as an unreachable server."""
    refuse_other_storage(dsn)
    try:
        normal = ci.make_conninfo(dsn)
    except psycopg.ProgrammingError as exc:
        msg = str(exc)
        parts_pw = dsn.split("@", 1)[0] if "@" in dsn else ""
        if parts_pw and ":" in parts_pw.split("//", 1)[-1]:
            msg = msg.replace(parts_pw.split(":")[-1], "***")
        raise JobsError(
            X_DSN_INVALID, cause=f"the DSN cannot be parsed: {msg.splitlines()[0] if msg else 'malformed'}", fix=DSN_FIX
        ) from None
    for value in _ports(dsn):
        if value and not (value.isdigit() and 0 < int(value) < 65536):
            raise JobsError(X_DSN_INVALID, cause=f"the DSN's port {value!r} is not a port number", fix=DSN_FIX)
    return normal


def gives_statement_timeout(dsn: str) -> bool:
    """Whether the DSN's options already set a statement timeout (as with_timeouts puts one)."""
    return "statement_timeout" in str(ci.conninfo_to_dict(dsn).get("options") or "")


def with_timeouts(
    dsn: str,
    *,
    connect_timeout: int | None,
    statement_timeout_ms: int | None,
    connect_given: bool = False,
    statement_given: bool = False,
) -> str:
    """The DSN with a connect timeout (whole seconds) and a server-side statement timeout (ms,
    through libpq's ``options``), so every connection made from it, by any pool or library,
    carries both. None leaves either out. A default fills only what the DSN leaves out; one the
    caller was given (``*_given``: a flag or an environment variable) wins over the DSN's own:
    the connect timeout replaces it, the statement timeout goes after the DSN's options (the
    last of a setting given twice wins)."""
    parts = ci.conninfo_to_dict(check_dsn(dsn))
    extra: dict[str, Any] = {}
    if connect_timeout is not None and (connect_given or parts.get("connect_timeout") in (None, "")):
        extra["connect_timeout"] = int(connect_timeout)
    options = str(parts.get("options") or "")
    if statement_timeout_ms is not None and (statement_given or not gives_statement_timeout(dsn)):
        extra["options"] = f"{options} -c statement_timeout={int(statement_timeout_ms)}".strip()
    return ci.make_conninfo(dsn, **extra) if extra else dsn


def unreachable(dsn: str, exc: BaseException) -> JobsError:
    """A connection that could not be opened: ConnectionLost (a settle under way retries it
    while its lease holds, as it does a connection that broke), saying which database and why;
    a pooler that refuses the connection's startup options is no outage, and says what to drop."""
    reason = first_line(exc)
    params = ci.conninfo_to_dict(dsn)
    pw = params.get("password")
    if pw:
        reason = reason.replace(str(pw), "***")
    if "timeout expired" in reason:  # the server took the connection and never answered
        wait = params.get("connect_timeout") or DEFAULT_CONNECT_TIMEOUT
        reason = f"no answer within {wait} s (connect_timeout): the server is frozen, overloaded or cut off"
    cause = f"could not connect to {describe_target(dsn)}: {reason}"
    if "unsupported startup parameter: options" in reason:  # PgBouncer's refusal
        return JobsError(
            X_DB_UNREACHABLE,
            cause=f"{cause} (a pooler such as PgBouncer takes no statement timeout at connection start; "
            "from Python, connect(dsn, statement_timeout_ms=None) sends none; a DSN naming the server itself "
            "takes one)",
            fix="jobsctl --statement-timeout 0 COMMAND",
        )
    return ConnectionLost(cause, condition=condition_of(exc))
