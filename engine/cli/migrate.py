"""`jobsctl migrate`: apply the pending migrations (sql/migrations), say what is applied and pending
(--status), or print the pending SQL for another tool to run (--sql). `jobsctl install` is the same
command under the first release's name."""

from __future__ import annotations

import json
from datetime import UTC

import typer

from engine.cli import app, fail
from engine.cli.admin import DSN_HELP, resolve_dsn
from engine.errors import X_INVALID_ARGUMENT, JobsError

STATUS_HELP = "list the applied and the pending migrations; apply nothing"
SQL_HELP = "print the pending migrations' SQL (with their recording in jobs.migration); apply nothing"
SINCE_HELP = "with --sql: the migrations after this version, read from no database"
UNTIL_HELP = "with --sql --since: up to this version (default: the last)"


def _status_rows(dsn: str) -> tuple[str, list[dict[str, object]]]:
    from engine.drivers.postgres.dsn import safe_dsn
    from engine.schema import migration_status

    status = migration_status(dsn)
    applied = {a.version: a for a in status.applied}
    changed = {m.version for m, _ in status.changed}
    rows: list[dict[str, object]] = []
    for m in status.known:
        a = applied.get(m.version)
        state = "pending" if a is None else "changed" if m.version in changed else "applied"
        rows.append(
            {
                "version": m.version,
                "name": m.name,
                "state": state,
                "method": None if a is None else a.method,
                "applied_at": None if a is None or a.applied_at is None else a.applied_at.astimezone(UTC).isoformat(),
            }
        )
    for a in status.unknown:  # applied by a newer release than this engine
        rows.append(
            {
                "version": a.version,
                "name": a.name,
                "state": "unknown",
                "method": a.method,
                "applied_at": None if a.applied_at is None else a.applied_at.astimezone(UTC).isoformat(),
            }
        )
    return safe_dsn(dsn), rows


def _print_status(target: str, rows: list[dict[str, object]]) -> None:
    pending = [r for r in rows if r["state"] == "pending"]
    typer.echo(f"jobs schema in {target}:")
    for r in rows:
        stamp = str(r["applied_at"] or "")[:19].replace("T", " ")  # to the second, in UTC (the database's now())
        when = f"{stamp} UTC" if stamp else "(recognised, not yet recorded)" if r["method"] == "baseline" else ""
        how = f"{r['method']} {when}".strip() if r["method"] else ""
        typer.echo(f"  {int(str(r['version'])):04d}_{r['name']:<28} {r['state']:<8} {how}".rstrip())
    if any(r["state"] == "changed" for r in rows):
        typer.echo("changed: an applied migration's file differs from what was applied (X_MIGRATION_CHANGED)")
    typer.echo(f"{len(pending)} pending" + (": run `jobsctl migrate`" if pending else ""))


def _check_range(since: int, until: int | None) -> None:
    """--since and --until within the versions this engine ships, refused with this command's fix:
    a version past the last is a typo that would print a script applying nothing."""
    from engine.schema import migrations

    last = migrations()[-1].version
    if since > last:
        cause = f"--since {since} is past the last migration, {last:04d}"
    elif until is not None and not since <= until <= last:
        cause = f"--until {until} must be between --since {since} and the last migration, {last:04d}"
    else:
        return
    raise JobsError(
        X_INVALID_ARGUMENT, cause=cause, fix=f"jobsctl migrate --sql --since {min(since, last)} --until {last}"
    )


def _migrate(dsn: str | None, status: bool, sql: bool, since: int | None, until: int | None, json_out: bool) -> None:
    from engine.drivers.postgres.dsn import safe_dsn
    from engine.schema import migrate, migration_sql, pending_sql

    try:
        if (since is not None and not sql) or (until is not None and since is None) or (status and sql):
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause="--status and --sql are two different answers"
                if status and sql
                else "--since goes with --sql, and --until with --since",
                fix="jobsctl migrate --sql --since 1 --until 2",
            )
        if sql and json_out:  # the script is the answer: it has no JSON form
            raise JobsError(
                X_INVALID_ARGUMENT, cause="--sql prints a SQL script, not JSON", fix="jobsctl migrate --sql > jobs.sql"
            )
        if sql and since is not None:
            _check_range(since, until)
            if dsn is not None:  # the script comes from this engine's files: the DSN would be read by nothing
                raise JobsError(
                    X_INVALID_ARGUMENT,
                    cause="--sql --since prints the migrations after N and reads no database; --dsn would do nothing "
                    "(`jobsctl migrate --sql --dsn DSN` prints that database's pending SQL)",
                    fix=f"jobsctl migrate --sql --since {since} --until {until}"
                    if until is not None
                    else f"jobsctl migrate --sql --since {since}",
                )
            typer.echo(migration_sql(since, until), nl=False)
            return
        target = resolve_dsn(dsn, long_running=True)
        if sql:
            typer.echo(pending_sql(target), nl=False)
            return
        if status:
            where, rows = _status_rows(target)
            if json_out:
                pending = [r["version"] for r in rows if r["state"] == "pending"]
                typer.echo(json.dumps({"database": where, "migrations": rows, "pending": pending}))
            else:
                _print_status(where, rows)
            return
        applied = migrate(target)
    except JobsError as err:
        fail(err, as_json=json_out)
    if json_out:
        typer.echo(json.dumps({"database": safe_dsn(target), "applied": [m.label for m in applied]}))
        return
    for m in applied:
        typer.echo(f"applied {m.label}")
    done = f"{len(applied)} migration(s) applied" if applied else "nothing to apply"
    typer.echo(f"{done}: the jobs schema in {safe_dsn(target)} is up to date")


@app.command()
def migrate(
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    status: bool = typer.Option(False, "--status", help=STATUS_HELP),
    sql: bool = typer.Option(False, "--sql", help=SQL_HELP),
    since: int = typer.Option(None, "--since", help=SINCE_HELP, min=0),
    until: int = typer.Option(None, "--until", help=UNTIL_HELP, min=0),
    json_out: bool = typer.Option(False, "--json", help="print JSON (errors as JSON on stderr)"),
) -> None:
    """Apply the pending schema migrations, in order, each in its own transaction (safe on a live database)."""
    _migrate(dsn, status, sql, since, until, json_out)


@app.command()
def install(
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP),
    status: bool = typer.Option(False, "--status", help=STATUS_HELP),
    sql: bool = typer.Option(False, "--sql", help=SQL_HELP),
    since: int = typer.Option(None, "--since", help=SINCE_HELP, min=0),
    until: int = typer.Option(None, "--until", help=UNTIL_HELP, min=0),
    json_out: bool = typer.Option(False, "--json", help="print JSON (errors as JSON on stderr)"),
) -> None:
    """The same as `jobsctl migrate` (its name in the first release)."""
    _migrate(dsn, status, sql, since, until, json_out)
