"""The one error type of the engine and the one registry of its codes.

Every error carries ``code`` (stable, greppable), ``cause`` (what happened, with the values),
``fix`` (ONE line a person can run or apply verbatim: never a command with prose appended) and
``docs`` (where the code is explained). Codes are declared here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

DOCS_BASE = "README.md#error-codes"


@dataclass(frozen=True)
class ErrorCode:
    code: str
    title: str


# The engine's own codes. An app's codes are registered with `register_error_codes`.
_CODES: dict[str, ErrorCode] = {}


def _declare(code: str, title: str) -> str:
    _CODES[code] = ErrorCode(code, title)
    return code


X_IDEMPOTENCY_REQUIRED = _declare("X_IDEMPOTENCY_REQUIRED", "a job definition has no idempotency key")
X_INVALID_DEFINITION = _declare("X_INVALID_DEFINITION", "a job definition has an invalid option")
X_DUPLICATE_JOB = _declare("X_DUPLICATE_JOB", "two job definitions share one name")
X_NOT_A_JOB = _declare("X_NOT_A_JOB", "something that is not a job handle was registered")
X_UNKNOWN_JOB = _declare("X_UNKNOWN_JOB", "no job of that name is registered")
X_INPUT_NOT_JSON = _declare("X_INPUT_NOT_JSON", "a job input or result is not a JSON value PostgreSQL can store")
X_TOO_LARGE = _declare("X_TOO_LARGE", "a job input, result, step result or event payload is larger than the size limit")
X_NOT_IMPLEMENTED = _declare("X_NOT_IMPLEMENTED", "the engine does not implement what was asked for")
X_INVALID_ARGUMENT = _declare("X_INVALID_ARGUMENT", "an argument is out of range or malformed")
X_DSN_INVALID = _declare("X_DSN_INVALID", "the database address cannot be used")
X_DB_UNREACHABLE = _declare("X_DB_UNREACHABLE", "the database did not accept a connection")
X_SCHEMA_MISSING = _declare("X_SCHEMA_MISSING", "the jobs schema is not installed")
X_SCHEMA_OUTDATED = _declare("X_SCHEMA_OUTDATED", "the jobs schema is older than this engine")
X_MIGRATION_FAILED = _declare("X_MIGRATION_FAILED", "a migration failed and was rolled back")
X_SERVER_UNSUPPORTED = _declare("X_SERVER_UNSUPPORTED", "the PostgreSQL server is older than jobs supports (15)")
X_MIGRATION_CHANGED = _declare("X_MIGRATION_CHANGED", "an applied migration's file no longer matches what was applied")
X_SQL_CATALOG = _declare("X_SQL_CATALOG", "the named SQL statements are inconsistent")
X_NOT_FOUND = _declare("X_NOT_FOUND", "no job has that id (for this tenant)")
X_MALFORMED_ID = _declare("X_MALFORMED_ID", "a job id is neither a UUID nor 6 or more hex digits of one")
X_AMBIGUOUS_ID = _declare("X_AMBIGUOUS_ID", "a short job id is part of more than one job's id")
X_TENANT_MISMATCH = _declare("X_TENANT_MISMATCH", "the job belongs to another tenant")
X_INVALID_STATE = _declare("X_INVALID_STATE", "the job is not in a state that allows the action")
X_UNKNOWN_STATE = _declare("X_UNKNOWN_STATE", "a filter names a state that does not exist")
X_UNKNOWN_STEP = _declare("X_UNKNOWN_STEP", "a job has no step of that name")
X_DUPLICATE_STEP = _declare("X_DUPLICATE_STEP", "two steps of one run share a name")
X_INVARIANT = _declare("X_INVARIANT", "a value breaks an invariant the engine relies on")
X_OUTBOX_NO_TX = _declare("X_OUTBOX_NO_TX", "stage() was called outside a transaction in required mode")
X_KEY_HELD = _declare("X_KEY_HELD", "another live job holds the idempotency key, so a retry would run the work twice")
X_ABORTED = _declare("X_ABORTED", "a write was attempted after the run was cancelled or timed out")
X_TIMEOUT = _declare("X_TIMEOUT", "an attempt or a step ran past its ceiling")
X_STEP_TIMEOUT = _declare("X_STEP_TIMEOUT", "a step ran past its step_timeout")
X_LEASE_LOST = _declare("X_LEASE_LOST", "the worker no longer holds the job's lease")
X_UNKNOWN_QUEUE = _declare("X_UNKNOWN_QUEUE", "no job, job row or worker names that queue")
X_UNKNOWN_WORKER = _declare("X_UNKNOWN_WORKER", "no registered worker has that id")
X_READ_ONLY = _declare("X_READ_ONLY", "a mutating action was refused in read-only mode")
X_PERMISSION_DENIED = _declare("X_PERMISSION_DENIED", "the database role lacks a privilege the statement needs")
X_DB_READ_ONLY = _declare("X_DB_READ_ONLY", "the database refuses writes (a hot standby, or a read-only session)")
X_POOLER_PREPARED = _declare(
    "X_POOLER_PREPARED", "the engine's prepared statements went through a pooler in transaction mode"
)
X_SYNC_IN_LOOP = _declare(
    "X_SYNC_IN_LOOP", "a sync engine call was made on the engine's own event loop, where it would wait for itself"
)
X_QUERY_BUDGET = _declare("X_QUERY_BUDGET", "an introspection query ran past its time budget and was cut off")
X_STATEMENT_TIMEOUT = _declare(
    "X_STATEMENT_TIMEOUT", "the server cancelled a statement that ran past its statement timeout"
)
X_EMBEDDED_PG = _declare("X_EMBEDDED_PG", "the embedded PostgreSQL server could not start")
X_WORKER_TARGET = _declare("X_WORKER_TARGET", "the worker's module or attribute cannot be loaded")
X_HANDLER_FAILED = _declare("X_HANDLER_FAILED", "a handler raised a non-engine exception")
X_UNKNOWN_TASK = _declare("X_UNKNOWN_TASK", "no cron task of that name is declared")

# Backfills (I22): each answers "why is this sweep not running?" and sends the reader somewhere different.
X_BACKFILL_PENDING = _declare("X_BACKFILL_PENDING", "a declared backfill has no completed write pass here")
X_BACKFILL_APPLIED = _declare("X_BACKFILL_APPLIED", "the backfill already completed here; a rerun needs --force")
X_BACKFILL_ENVIRONMENT = _declare("X_BACKFILL_ENVIRONMENT", "the backfill does not declare this environment")
X_BACKFILL_MIGRATION_PENDING = _declare(
    "X_BACKFILL_MIGRATION_PENDING", "the migration the backfill requires is not applied"
)
X_BACKFILL_RUNNING = _declare("X_BACKFILL_RUNNING", "the backfill already has a live pass")
X_BACKFILL_STALLED = _declare("X_BACKFILL_STALLED", "the source ran out while count() still matches rows")
X_BACKFILL_UNKNOWN = _declare("X_BACKFILL_UNKNOWN", "no backfill of that name is declared")
X_WAIT_TIMEOUT = _declare("X_WAIT_TIMEOUT", "a wait for a job's outcome ran past its timeout; the job goes on")
X_WAITED_JOB_GONE = _declare(
    "X_WAITED_JOB_GONE", "a job a step waits for does not exist (never enqueued, or discarded while waited for)"
)


# The engine's own codes, before any app registers its codes (the README documents these).
ENGINE_CODES: frozenset[str] = frozenset(_CODES)


def register_error_codes(codes: dict[str, str]) -> None:
    """Declare an app's own codes ({code: title}) so they render with a title. The whole table is
    checked before any code is registered."""
    fix = "register_error_codes({'X_MY_CODE': 'what it means'})"
    if not isinstance(codes, dict):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"register_error_codes takes a dict of {{code: title}}, not {codes!r:.60}",
            fix=fix,
        )
    for code, title in codes.items():
        if not isinstance(code, str) or not code or not code.isupper():
            raise JobsError(X_INVALID_ARGUMENT, cause=f"error code {code!r} is not an upper-case identifier", fix=fix)
        if not isinstance(title, str):
            raise JobsError(X_INVALID_ARGUMENT, cause=f"error code {code!r} has title {title!r}, not a string", fix=fix)
    for code, title in codes.items():
        _CODES[code] = ErrorCode(code, title)


def docs_for(code: str) -> str:
    return f"{DOCS_BASE}-{code.lower()}"


class JobsError(Exception):
    """The one error type the engine raises, and the one a handler raises to name its failure:
    ``code`` (what register_error_retry classifies), ``cause`` (what happened, with the values) and
    ``fix`` (one line to run or apply; stored with the failed attempt and shown with the dead
    letter). ``retry_after`` (seconds) is read by retry-after codes. Every error the engine raises
    names a fix (tests/engine/test_house_rules.py); a handler's may leave it empty."""

    def __init__(
        self,
        code: str,
        cause: str,
        fix: str = "",
        *,
        docs: str | None = None,
        retry_after: float | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{code}: {cause}")
        self.code = code
        self.cause = cause
        self.fix = fix
        self.docs = docs or docs_for(code)
        self.retry_after = retry_after
        self.meta = dict(meta or {})

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "cause": self.cause, "fix": self.fix, "docs": self.docs}

    def render(self) -> str:
        return f"{self.code}: {self.cause}\n  fix: {self.fix}\n  docs: {self.docs}"


# What a database failure means for whoever watches it (``meta["condition"]`` of the error): the
# server cannot be reached or does not answer, it is shutting down (or starting up), or it answers
# too slowly (a statement cut off by a timeout). The console's banner names it.
UNREACHABLE, SHUTTING_DOWN, SLOW = "unreachable", "shutting-down", "slow"


def unknown_option(
    subject: str, given: Iterable[str], options: Sequence[str], fix: str, default: str, code: str = ""
) -> JobsError:
    """The first unknown keyword ``given`` to a declaration (X_INVALID_DEFINITION) or a call
    (``code``): the nearest of ``options`` ("did you mean"), else all of them. ``fix`` is the call
    with ``{option}`` where the option to write goes (the nearest one, else ``default``)."""
    bad = sorted(given)[0]
    import difflib  # only a mistake pays its import

    near = difflib.get_close_matches(bad, options, n=1)
    return JobsError(
        code or X_INVALID_DEFINITION,
        cause=f"{subject} {bad!r}"
        + (f" (did you mean {near[0]!r}?)" if near else f"; its options: {', '.join(options)}"),
        fix=fix.format(option=near[0] if near else default),
    )


class ConnectionLost(JobsError):
    """The storage's connection failed under a call (the server away or restarting, the pool
    exhausted), not the call's own statement: the call may be repeated after a backoff. A driver
    raises it for its own errors of that kind, so the runtime recognises one error whatever the
    driver. Its code is X_DB_UNREACHABLE, the code of a database that did not answer;
    ``condition`` is UNREACHABLE or SHUTTING_DOWN."""

    def __init__(self, cause: str, *, condition: str = UNREACHABLE) -> None:
        super().__init__(
            X_DB_UNREACHABLE,
            cause=cause,
            fix="check the server is up and the DSN is right: psql \"$JOBS_DSN\" -c 'select 1'",
            meta={"condition": condition},
        )
