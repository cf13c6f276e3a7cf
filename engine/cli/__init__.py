"""`jobs`: the operator CLI (typer). Each command group lives in its own module and registers
itself on `app`; this file only wires them and turns a JobsError into code, cause and fix."""

from __future__ import annotations

import json
import sys

import typer

from engine.errors import X_NOT_FOUND, X_UNKNOWN_JOB, JobsError
from engine.text import printable

app = typer.Typer(
    name="jobs",
    help="Operate a jobs deployment: install the schema, run workers, inspect and act on queues.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Operate a jobs deployment: install the schema, run workers, inspect and act on queues."""


# Exit codes scripts can use.
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_DRIFT = 0, 1, 2, 3, 4


def error_text(err: JobsError) -> str:
    """An engine error as the CLI prints it: code, cause, fix and docs, one per line. A cause may
    quote data (a name, a tenant): shown escaped, as the tables show it."""
    return printable(f"error {err.code}: {err.cause}\n  fix: {err.fix}\n  docs: {err.docs}\n")


def fail(err: JobsError, *, as_json: bool = False) -> None:
    """Print an engine error as code, cause and fix (JSON on stderr with --json) and exit."""
    if as_json:
        sys.stderr.write(json.dumps({"error": err.as_dict()}) + "\n")
    else:
        sys.stderr.write(error_text(err))
    raise typer.Exit(EXIT_NOT_FOUND if err.code in (X_NOT_FOUND, X_UNKNOWN_JOB) else EXIT_ERROR)


def _register() -> None:
    # Imported for their side effect: each module adds its commands to `app`.
    import engine.cli.backfill  # noqa: F401  (backfill: pending, status, start, cancel, retry)
    import engine.cli.ops  # noqa: F401  (retry, cancel, discard, pause, resume, event, enqueue, workers drain)
    import engine.cli.reads  # noqa: F401  (queues, ls, show, dead, workers, why, describe)
    import engine.cli.schedule  # noqa: F401  (schedule, schedule pause|resume|trigger, scheduler)
    from engine.cli import migrate, outbox, worker  # noqa: F401  (migrate, install; outbox, relay; worker)


_register()


def main() -> None:
    app()
