"""`jobs install`: install or upgrade the schema. Running it twice is a no-op (I3)."""

from __future__ import annotations

import os

import typer

from engine.cli import app, fail
from engine.drivers.postgres.pool import safe_dsn
from engine.errors import X_DSN_INVALID, JobsError

DSN_HELP = "PostgreSQL DSN (URL or key=value); defaults to $JOBS_DSN"


def resolve_dsn(dsn: str | None) -> str:
    value = dsn or os.environ.get("JOBS_DSN")
    if not value:
        raise JobsError(
            X_DSN_INVALID,
            cause="no DSN was given and $JOBS_DSN is not set",
            fix="export JOBS_DSN=postgresql://USER@HOST:5432/DBNAME",
        )
    return value


@app.command()
def install(
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP), json_out: bool = typer.Option(False, "--json")
) -> None:
    """Install or upgrade the jobs schema (re-runnable on a live database)."""
    from engine.schema import install_schema

    try:
        target = resolve_dsn(dsn)
        install_schema(target)
    except JobsError as err:
        fail(err, as_json=json_out)
    typer.echo(f"jobs schema installed in {safe_dsn(target)}")
