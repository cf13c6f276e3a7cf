"""`jobs`: the operator CLI (typer). Each command group lives in its own module and registers
itself on `app`; this file only wires them and turns a JobsError into code, cause and fix (and a
usage error of an invocation given --json into the same JSON error). The root guards every
command with read-only mode (engine/cli/read_only.py)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import typer

from engine.cli.admin import (
    CONNECT_ENV,
    CONNECT_HELP,
    STATEMENT_ENV,
    STATEMENT_HELP,
    dsn_fix,
    fix_naming_given_dsn,
    no_prepared_statements_option,
    set_connections,
)
from engine.cli.read_only import (
    READ_ONLY_ENV,
    READ_ONLY_HELP,
    guard_all,
    reset_read_only,
    set_read_only,
    typed_with,
)
from engine.errors import (
    X_DSN_INVALID,
    X_INVALID_ARGUMENT,
    X_NOT_FOUND,
    X_STATEMENT_TIMEOUT,
    X_UNKNOWN_JOB,
    JobsError,
)
from engine.text import TENANT_FIX, printable

JSON_ASKED = "jobs.json"  # ctx.meta: the invocation's words hold --json (json_asked)
WORDS = "jobs.words"  # ctx.meta: the words after the program's name, the root's --read-only left out


def json_asked(args: Sequence[str]) -> bool:
    """Whether an invocation asked for JSON: ``--json`` among its words before a ``--`` (after it
    every word is a value). Read from the words, not from the parsed options, because it is asked
    when the parse failed; a ``--json`` typed where an option's value goes counts too."""
    words = list(args)
    end = words.index("--") if "--" in words else len(words)
    return "--json" in words[:end]


def _is_usage_error(exc: BaseException) -> bool:
    # click's UsageError (BadParameter, NoSuchOption, MissingParameter, ...), as typer vendors it:
    # matched by name, as engine/cli/reads.py matches NoSuchOption.
    return any(k.__name__ == "UsageError" for k in type(exc).__mro__)


def _usage_failed(exc: Any) -> NoReturn:
    """A usage error of an invocation given --json, said as every other refusal under --json is
    (a JSON error on stderr), with click's exit code for it (2). The fix is the help of the command
    whose parse failed."""
    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else "jobsctl"
    say_error(JobsError(X_INVALID_ARGUMENT, cause=exc.format_message(), fix=f"{where} --help"), as_json=True)
    raise typer.Exit(getattr(exc, "exit_code", EXIT_USAGE))


class Root(typer.core.TyperGroup):
    """The root command. A usage error (an unknown option or command, a missing argument, a value
    its type refuses) of an invocation whose words hold --json is a JSON error like the command's
    other refusals; without --json it is click's text. Every subcommand's parse runs inside the
    root's invoke, so both places below see them all. Every command's callback is guarded by
    read-only mode (read_only.guard_all), which repeats the words it was given in its fix."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        guard_all(self)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        words = list(args)  # the parser consumes ``args``
        left = super().parse_args(ctx, args)
        rest = [*getattr(ctx, "_protected_args", []), *left]  # the command's name and its words
        ctx.meta[WORDS] = [w for w in words[: len(words) - len(rest)] if w != "--read-only"] + rest
        return left

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        asked = json_asked(args)
        try:
            ctx = super().make_context(info_name, args, parent=parent, **extra)
        except Exception as exc:  # the root's own options (jobsctl --connect-timeout x ls --json)
            if asked and _is_usage_error(exc):
                _usage_failed(exc)
            raise
        ctx.meta[JSON_ASKED] = asked
        return ctx

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            if ctx.meta.get(JSON_ASKED) and _is_usage_error(exc):
                _usage_failed(exc)
            raise


app = typer.Typer(
    cls=Root,
    name="jobsctl",
    help="Operate a jobs deployment: install the schema, run workers, inspect and act on queues.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"jobs {version('jobs')}")
        except PackageNotFoundError:  # run from a checkout that was never installed
            typer.echo("jobs (not installed: no version)")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    ctx: typer.Context,
    connect_timeout: int = typer.Option(
        None,
        "--connect-timeout",
        envvar=CONNECT_ENV,
        help=CONNECT_HELP,
        metavar="SECONDS",
        show_default=False,
    ),
    statement_timeout: float = typer.Option(
        None,
        "--statement-timeout",
        envvar=STATEMENT_ENV,
        help=STATEMENT_HELP,
        metavar="SECONDS",
        show_default=False,
    ),
    no_prepared_statements: bool = no_prepared_statements_option(),
    read_only: bool = typer.Option(False, "--read-only", help=READ_ONLY_HELP),
    version: bool = typer.Option(
        False, "--version", help="print the version and exit", callback=_version, is_eager=True
    ),
) -> None:
    """Operate a jobs deployment: install the schema, run workers, inspect and act on queues."""
    ctx.call_on_close(reset_read_only)
    try:
        set_read_only(
            read_only,
            os.environ.get(READ_ONLY_ENV),
            ctx.meta.get(WORDS, ()),
            as_json=bool(ctx.meta.get(JSON_ASKED)),
        )
        set_connections(
            connect_timeout,
            statement_timeout,
            ctx.invoked_subcommand,
            prepared=not no_prepared_statements,
            from_env=tuple(
                var
                for name, var in (("connect_timeout", CONNECT_ENV), ("statement_timeout", STATEMENT_ENV))
                if getattr(ctx.get_parameter_source(name), "name", None)
                == "ENVIRONMENT"  # typer's own click, or click's
            ),
        )
    except JobsError as err:
        fail(err, as_json=bool(ctx.meta.get(JSON_ASKED)))


# Exit codes scripts can use.
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_DRIFT = 0, 1, 2, 3, 4


def error_text(err: JobsError) -> str:
    """An engine error as the CLI prints it: code, cause, fix and docs, one per line. A cause may
    quote data (a name, a tenant): shown escaped, as the tables show it."""
    return printable(f"error {err.code}: {err.cause}\n  fix: {err.fix}\n  docs: {err.docs}\n")


def for_this_command(err: JobsError) -> JobsError:
    """``err`` with the fix this command's user types: the fixes that name the Python API (a DSN's
    shape, a statement timeout) name the CLI's, and one that names "$JOBS_DSN" names the DSN given
    by --dsn instead (fix_naming_given_dsn)."""
    fix = err.fix
    if err.code == X_DSN_INVALID and fix.startswith("connect("):
        fix = dsn_fix()
    elif err.code == X_STATEMENT_TIMEOUT:
        fix = "export JOBS_STATEMENT_TIMEOUT=30"
    elif fix == TENANT_FIX:  # the Python API's keyword: the command as typed, its --tenant a valid one
        fix = typed_with("--tenant", "acme") or fix
    fix = fix_naming_given_dsn(fix)
    if fix == err.fix:
        return err
    return JobsError(err.code, cause=err.cause, fix=fix, docs=err.docs, meta=err.meta)


def say_error(err: JobsError, *, as_json: bool = False) -> None:
    """An engine error on stderr, its fix this command's (for_this_command): code, cause and fix,
    or a JSON object with --json."""
    err = for_this_command(err)
    if as_json:
        sys.stderr.write(json.dumps({"error": err.as_dict()}) + "\n")
    else:
        sys.stderr.write(error_text(err))


def fail(err: JobsError, *, as_json: bool = False) -> None:
    """Print an engine error as code, cause and fix (JSON on stderr with --json; say_error) and exit."""
    say_error(err, as_json=as_json)
    if err.code == X_DSN_INVALID:  # as jobs-console answers it: the command was given a wrong address
        raise typer.Exit(EXIT_USAGE)
    raise typer.Exit(EXIT_NOT_FOUND if err.code in (X_NOT_FOUND, X_UNKNOWN_JOB) else EXIT_ERROR)


def _register() -> None:
    # Imported for their side effect: each module adds its commands to `app`.
    import engine.cli.audit  # noqa: F401  (audit)
    import engine.cli.backfill  # noqa: F401  (backfill: pending, status, start, cancel, retry)
    import engine.cli.family  # noqa: F401  (children)
    import engine.cli.ops  # noqa: F401  (retry, cancel, discard, pause, resume, event, enqueue, workers drain)
    import engine.cli.reads  # noqa: F401  (queues, ls, show, dead, workers, why, describe)
    import engine.cli.schedule  # noqa: F401  (schedule, schedule pause|resume|trigger, scheduler)
    import engine.cli.waits  # noqa: F401  (wait)
    from engine.cli import migrate, outbox, worker  # noqa: F401  (migrate, install; outbox, relay; worker)


_register()


def main() -> None:
    app()
