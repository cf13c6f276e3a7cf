"""Which failures of a database call are the connection's (the server away, the pool exhausted),
not the statement's, and their translation into the engine's one error for them, ConnectionLost:
the runtime retries a call that raised it after a backoff (engine/runtime/settle.py), and a
shared statement fails every row alike; any other error belongs to the rows the statement wrote."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import psycopg_pool

from engine.errors import SHUTTING_DOWN, UNREACHABLE, ConnectionLost

# The server's own words when it is going away or not yet back (its sqlstate class 57P: admin
# shutdown, crash shutdown, cannot connect now); a failed connect carries only the text.
_SHUTDOWN_WORDS = ("shutting down", "starting up", "administrator command", "terminating connection", "in recovery")

CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    psycopg.OperationalError,
    psycopg.InterfaceError,
    psycopg_pool.PoolTimeout,
    ConnectionError,
    OSError,
)


def is_connection_error(exc: BaseException) -> bool:
    """Whether ``exc`` is the connection's; a value past the server's limits (sqlstate class 54)
    is one of psycopg's OperationalErrors too, but the statement's."""
    return isinstance(exc, (ConnectionLost, *CONNECTION_ERRORS)) and not isinstance(
        exc, psycopg.errors.ProgramLimitExceeded
    )


def condition_of(exc: BaseException) -> str:
    """SHUTTING_DOWN when the server said it is going away (or not back yet), else UNREACHABLE."""
    if isinstance(exc, (psycopg.errors.AdminShutdown, psycopg.errors.CrashShutdown, psycopg.errors.CannotConnectNow)):
        return SHUTTING_DOWN
    text = str(exc).lower()
    return SHUTTING_DOWN if any(w in text for w in _SHUTDOWN_WORDS) else UNREACHABLE


def first_line(exc: BaseException, default: str | None = None) -> str:
    """What an error says, in a line: its message's first, else ``default``, else its type's name."""
    said = str(exc).strip().splitlines()
    return said[0] if said else default or type(exc).__name__


def rolled_back(exc: BaseException | None) -> bool:
    """Whether the server rolled ``exc``'s transaction back (sqlstate class 40: a serialization
    failure, a deadlock): nothing of it happened, so it may be repeated."""
    return str(getattr(exc, "sqlstate", None) or "").startswith("40")


def lost(exc: BaseException) -> ConnectionLost:
    """The engine's error for a connection failure ``exc`` (raise it ``from exc``). A transaction
    the server rolled back (rolled_back) is one of psycopg's OperationalErrors too, retried alike,
    but said as what it is."""
    said = first_line(exc)
    if rolled_back(exc):
        return ConnectionLost(f"the database rolled the statement back ({said}); it may be repeated")
    return ConnectionLost(f"the connection to the database failed: {said}", condition=condition_of(exc))


@contextmanager
def connection_lost() -> Iterator[None]:
    """Raise a connection failure inside the block as ConnectionLost (its cause the original)."""
    try:
        yield
    except CONNECTION_ERRORS as exc:
        raise lost(exc) from exc
