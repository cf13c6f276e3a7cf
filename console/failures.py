"""What a failed call to the engine is said as: the database's condition (unreachable, shutting
down, slow), an engine's refusal by its code, or, for anything else, a fault of the console's own.
Never the DSN's password."""

from __future__ import annotations

from console.format import clean, redact_dsn
from engine.errors import SHUTTING_DOWN, SLOW, UNREACHABLE, X_DB_UNREACHABLE, JobsError

CONDITION_TITLES = {UNREACHABLE: "database unreachable", SHUTTING_DOWN: "database shutting down", SLOW: "database slow"}


class NoAnswer(TimeoutError):
    """A read the database did not answer within the source's deadline."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no answer within {seconds:g}s")
        self.seconds = seconds


def database_failure(exc: BaseException) -> tuple[str, str] | None:
    """A title and a detail naming what the database or the engine said, or None when the failure
    is neither's (a fault of the console's own)."""
    if isinstance(exc, NoAnswer):
        return "database unreachable", f"no answer within {exc.seconds:g}s: the server is frozen, overloaded or cut off"
    if isinstance(exc, JobsError):
        condition = exc.meta.get("condition")
        title = CONDITION_TITLES.get(condition) if isinstance(condition, str) else None
        if title is None:
            title = "database unreachable" if exc.code == X_DB_UNREACHABLE else exc.code
        return title, redact_dsn(clean(exc.cause, limit=160))
    name = type(exc).__name__
    if name in ("AdminShutdown", "CrashShutdown", "CannotConnectNow"):  # never shown raw
        return "database shutting down", redact_dsn(clean(str(exc) or name, limit=160))
    if isinstance(exc, (ConnectionError, OSError)) or "Operational" in name:
        return "database unreachable", redact_dsn(clean(str(exc) or name, limit=160))
    return None


def describe_failure(exc: BaseException) -> tuple[str, str]:
    """A banner's title and detail for a failed read, naming the condition: the database
    unreachable (refused, or no answer at all), shutting down, or slow (a statement cut off
    by its budget)."""
    said = database_failure(exc)
    if said is not None:
        return said
    return f"refresh failed ({type(exc).__name__})", redact_dsn(clean(str(exc), limit=160))
