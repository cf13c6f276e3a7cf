"""Applying the migrations (sql/migrations) to a database, reading what it has applied, and the
check an engine makes when it opens one.

Each pending migration runs in its own transaction that first takes the migration lock and
re-reads what is applied, so two migrators at once apply each migration exactly once, and a
migration that fails leaves the database at the one before it.

What is applied is read before anything is written: a database with nothing pending is left as it
is, so any role that may read jobs.migration (a jobs_reader or a jobs_writer login) is told
"nothing to apply". Creating the schema or applying a migration takes the schema's owner (the
first, CREATE on the database); another role is refused as X_PERMISSION_DENIED, naming the script
`jobsctl migrate --sql` prints for the owner to run.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from engine.drivers.migrations import Applied, Migration, MigrationStatus, migrations, status_of
from engine.drivers.postgres.base import cancelled
from engine.drivers.postgres.dsn import check_dsn, gives_statement_timeout, safe_dsn, unreachable
from engine.drivers.sqlfiles import Q, Query
from engine.drivers.transient import first_line
from engine.errors import (
    X_INVALID_ARGUMENT,
    X_MIGRATION_CHANGED,
    X_MIGRATION_FAILED,
    X_PERMISSION_DENIED,
    X_SCHEMA_MISSING,
    X_SCHEMA_OUTDATED,
    X_SERVER_UNSUPPORTED,
    JobsError,
)

MIGRATE_FIX = 'jobsctl migrate --dsn "$JOBS_DSN"'
# A role that may not migrate: the script of what is pending, for the schema's owner to run.
OWNER_SCRIPT_FIX = 'jobsctl migrate --sql --dsn "$JOBS_DSN" > jobs-pending.sql'


def _connect(dsn: str) -> psycopg.Connection[dict[str, Any]]:
    """A connection to a server jobs supports (migration_server_check), or the error saying why not.
    It prepares no statement: a migration runs each of its few statements once or a few times,
    and `jobsctl --no-prepared-statements migrate` (a deployment behind a transaction pooler) holds
    for it without a flag of its own."""
    conninfo = check_dsn(dsn)
    try:
        conn = psycopg.connect(conninfo, row_factory=dict_row, autocommit=True, prepare_threshold=None)
    except psycopg.OperationalError as exc:
        raise unreachable(conninfo, exc) from None
    try:
        if not gives_statement_timeout(conninfo):
            # None given (jobsctl migrate --statement-timeout): not the database's or the role's
            # default either, which would cut an index build of a big table off half way.
            conn.execute(Q.upkeep_session.text)
        conn.execute(Q.migration_server_check.text)
        conn.execute(Q.session_settings.text)  # type: ignore[arg-type]  # as the pool's sessions
    except psycopg.errors.QueryCanceled as exc:  # a statement timeout given too short to check
        conn.close()
        raise cancelled(exc) from None
    except psycopg.errors.FeatureNotSupported as exc:
        conn.close()
        raise JobsError(
            X_SERVER_UNSUPPORTED,
            cause=f"{safe_dsn(dsn)}: {first_line(exc)}; nothing was applied (a server of PostgreSQL 15 or "
            "later, named by JOBS_DSN, takes the schema as it is)",
            fix="pg_upgrade the server to PostgreSQL 15 or later",
        ) from None
    conn.autocommit = False
    return conn


def _read(conn: psycopg.Connection[dict[str, Any]], dsn: str) -> MigrationStatus:
    try:
        present = conn.execute(Q.migration_presence.text).fetchone() or {}
        rows = conn.execute(Q.migration_applied.text).fetchall() if present.get("has_migration") else []
        meta = conn.execute(Q.schema_version.text).fetchone() if present.get("has_meta") else None
    except psycopg.errors.QueryCanceled as exc:  # past a statement timeout given to the command
        raise cancelled(exc) from None
    except psycopg.errors.InsufficientPrivilege as exc:  # a login granted neither jobs_reader nor more
        user = conn.info.user
        raise JobsError(
            X_PERMISSION_DENIED,
            cause=f"role {user!r} may not read jobs.migration in {safe_dsn(dsn)} ({first_line(exc)}): "
            "what is applied and what is pending cannot be told",
            fix=f"GRANT jobs_reader TO {user}",
        ) from None
    return status_of([Applied(**r) for r in rows], None if meta is None else str(meta["value"]))


def migration_status(dsn: str) -> MigrationStatus:
    """What the database has applied and what is pending. Reads only: creates nothing."""
    with _connect(dsn) as conn:
        return _read(conn, dsn)


def _writes(status: MigrationStatus, target: int | None) -> bool:
    """Whether migrating to ``target`` writes anything: a migration pending up to it, or a
    baseline recognised but not yet recorded (the bootstrap records it)."""
    return any(target is None or m.version <= target for m in status.pending) or any(
        a.applied_at is None for a in status.applied
    )


def _not_owner(
    conn: psycopg.Connection[dict[str, Any]], dsn: str, status: MigrationStatus, exc: BaseException, *, creating: bool
) -> JobsError:
    """A role the server refused the bootstrap (``creating``) or a migration: not the owner of the
    jobs schema (nor, for the schema's creation, a holder of CREATE on the database), named with the
    role that owns it, who runs the script the fix prints. Called once the refused transaction has
    rolled back, so the owner can be read on the same connection."""
    user, said = conn.info.user, first_line(exc)
    if creating and not status.installed:
        cause = (
            f"role {user!r} may not create the jobs schema in {safe_dsn(dsn)}: it lacks CREATE on database "
            f"{conn.info.dbname} ({said}); nothing was applied"
        )
        return JobsError(X_PERMISSION_DENIED, cause=cause, fix=OWNER_SCRIPT_FIX)
    todo = status.pending
    names = ", ".join(m.label for m in todo[:3]) + (", ..." if len(todo) > 3 else "")
    at = max((a.version for a in status.applied), default=0)
    owner = _schema_owner(conn)
    who = "the owner of the jobs schema" if owner is None else f"role {owner!r}, the owner of the jobs schema,"
    cause = (
        f"role {user!r} may not apply the {len(todo)} pending migration(s) ({names}) to {safe_dsn(dsn)} "
        f"({said}): only {who} applies them; the schema stays at {at:04d}"
    )
    fix = OWNER_SCRIPT_FIX if owner is None else f"{OWNER_SCRIPT_FIX}  # for role {owner} to run"
    return JobsError(X_PERMISSION_DENIED, cause=cause, fix=fix)


def _schema_owner(conn: psycopg.Connection[dict[str, Any]]) -> str | None:
    """The role that owns the jobs schema, or None when it cannot be told (no schema, or the read
    failed: the refusal is said without the name rather than lost)."""
    try:
        with conn.transaction():
            row = conn.execute(Q.migration_schema_owner.text).fetchone()
    except psycopg.Error:
        return None
    return None if row is None or row.get("owner") is None else str(row["owner"])


def _refuse_to_apply(status: MigrationStatus, dsn: str) -> None:
    if status.changed:
        mig, applied = status.changed[0]
        raise JobsError(
            X_MIGRATION_CHANGED,
            cause=(
                f"migration {mig.label} was applied to {safe_dsn(dsn)} with checksum {str(applied.checksum)[:12]}..., "
                f"but sql/migrations/{mig.label}.sql now hashes to {mig.checksum[:12]}...: "
                "an applied migration never changes; a change goes in a new one"
            ),
            fix=f"git checkout -- sql/migrations/{mig.label}.sql",
        )
    if status.foreign_version is not None:
        raise JobsError(
            X_SCHEMA_OUTDATED,
            cause=(
                f"jobs.meta in {safe_dsn(dsn)} says schema version {status.foreign_version}, "
                "which no release installed: no migration starts from it (dropping the schema loses its jobs)"
            ),
            fix='psql "$JOBS_DSN" -c "drop schema jobs cascade" && jobsctl migrate --dsn "$JOBS_DSN"',
        )


def migrate(dsn: str, *, target: int | None = None) -> list[Migration]:
    """Apply every pending migration (up to ``target``), in order, each in its own transaction
    under the migration lock; return the ones this call applied."""
    done: list[Migration] = []
    with _connect(dsn) as conn:
        with conn.transaction():  # read first: a database with nothing to write is left as it is
            status = _read(conn, dsn)
        _refuse_to_apply(status, dsn)
        while _writes(status, target):
            creating = True  # the bootstrap (the schema's creation) runs first, then the migration
            try:
                with conn.transaction():  # a refusal leaves it rolled back, then is said (_not_owner)
                    conn.execute(Q.migration_lock.text)
                    conn.execute(Q.migration_bootstrap.text)
                    creating = False
                    status = _read(conn, dsn)
                    _refuse_to_apply(status, dsn)
                    todo = [m for m in status.pending if target is None or m.version <= target]
                    if not todo:
                        break
                    mig = todo[0]
                    try:
                        conn.execute(mig.text)  # type: ignore[arg-type]  # a file of ours, not text from a caller
                    except psycopg.errors.InsufficientPrivilege:
                        raise
                    except psycopg.DatabaseError as exc:
                        raise _failed(mig, status, dsn, exc) from exc
                    conn.execute(Q.migration_record.text, _record(mig, "migrate"))
            except psycopg.errors.InsufficientPrivilege as exc:
                raise _not_owner(conn, dsn, status, exc, creating=creating) from None
            done.append(mig)
        try:
            move_settled(conn)
        except psycopg.errors.InsufficientPrivilege:
            # A role that may not write jobs.job (a jobs_reader) moves no settled row: the
            # maintenance leader moves those still there, and until then they read as before.
            pass
    return done


# Rows a batch of job_move_settled moves: each batch is its own short transaction, so workers
# claiming and settling meanwhile wait on none of them.
MOVE_BATCH = 5_000


def move_settled(conn: psycopg.Connection[dict[str, Any]], *, batch: int = MOVE_BATCH) -> int:
    """Move the settled rows still in jobs.job into jobs.job_done (0010_settled_rows.sql), a
    batch per transaction, until none is left; answer how many moved. Nothing before 0010."""
    with conn.transaction():
        present = (conn.execute(Q.job_done_presence.text).fetchone() or {}).get("present")
    if not present:
        return 0
    moved = 0
    while True:
        with conn.transaction():
            n = int((conn.execute(Q.job_move_settled.text, {"limit": batch}).fetchone() or {"moved": 0})["moved"])
        moved += n
        if n == 0:
            return moved


def _failed(mig: Migration, status: MigrationStatus, dsn: str, exc: BaseException) -> JobsError:
    reason = first_line(exc)
    at = max((a.version for a in status.applied), default=0)
    return JobsError(
        X_MIGRATION_FAILED,
        cause=f"{mig.label} failed in {safe_dsn(dsn)} ({reason}) and was rolled back: the schema stays at {at:04d}",
        fix='jobsctl migrate --status --dsn "$JOBS_DSN"',
    )


def _record(mig: Migration, method: str) -> dict[str, Any]:
    return {"version": mig.version, "name": mig.name, "checksum": mig.checksum, "method": method}


_PARAM = re.compile(r"%\((\w+)\)s")


def _rendered(text: str, params: dict[str, Any]) -> str:
    """A named statement with its parameters as SQL literals, for a script another tool runs."""
    return _PARAM.sub(lambda m: sql.Literal(params[m.group(1)]).as_string(), text)


def script_of(todo: tuple[Migration, ...] | list[Migration], *, header: str = "") -> str:
    """The script that applies ``todo`` and records each one (method 'sql'), so an engine then sees
    them applied: for a team whose own tool (Alembic, Django, Flyway, psql) runs migrations. It
    opens no transaction of its own: the tool's transaction holds it (psql: --single-transaction)."""
    parts = [f"-- {line}" for line in header.splitlines()]
    parts += [Q.migration_server_check.text + ";", Q.migration_lock.text + ";", Q.migration_bootstrap.text + ";"]
    for mig in todo:
        parts += [
            "",
            f"-- {mig.label}",
            mig.text.strip(),
            _rendered(Q.migration_record.text, _record(mig, "sql")) + ";",
        ]
    return "\n".join(parts) + "\n"


def pending_sql(dsn: str) -> str:
    status = migration_status(dsn)
    _refuse_to_apply(status, dsn)
    todo = status.pending
    head = f"jobsctl migrate --sql: {len(todo)} pending migration(s) for {safe_dsn(dsn)}"
    return script_of(todo, header=head)


def offline_sql(since: int, until: int | None = None) -> str:
    """The script of the migrations after version ``since`` up to ``until`` (default: the last),
    read from no database."""
    known = migrations()
    last = known[-1].version
    if until is not None and not since <= until <= last:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"until={until} must be between since={since} and the last migration, {last:04d}",
            fix=f"migration_sql(since={since}, until={last})",
        )
    end = last if until is None else until
    todo = tuple(m for m in known if since < m.version <= end)
    return script_of(todo, header=f"migrations after {since:04d} up to {end:04d}: {len(todo)}")


def refuse_unless_current(status: MigrationStatus, dsn: str) -> None:
    """An engine opened on a database it cannot use: no schema, or migrations pending."""
    if not status.installed:
        raise JobsError(X_SCHEMA_MISSING, cause=f"no jobs schema is installed in {safe_dsn(dsn)}", fix=MIGRATE_FIX)
    if status.pending:
        names = ", ".join(m.label for m in status.pending)
        raise JobsError(
            X_SCHEMA_OUTDATED,
            cause=f"{len(status.pending)} migration(s) are pending in {safe_dsn(dsn)}: {names}",
            fix=MIGRATE_FIX,
        )


async def check_current(
    dsn: str,
    one: Callable[[Query, dict[str, Any]], Awaitable[dict[str, Any] | None]],
    all_: Callable[[Query, dict[str, Any]], Awaitable[list[dict[str, Any]]]],
) -> None:
    """The engine's check at open, over the driver's pool (``one``/``all_`` run a statement)."""
    present = await one(Q.migration_presence, {}) or {}
    rows = await all_(Q.migration_applied, {}) if present.get("has_migration") else []
    meta = await one(Q.schema_version, {}) if present.get("has_meta") else None
    status = status_of([Applied(**r) for r in rows], None if meta is None else str(meta["value"]))
    refuse_unless_current(status, dsn)
