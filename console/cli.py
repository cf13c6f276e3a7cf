"""`jobs-console`: open the console on a database, or `jobs-console demo` on the embedded demo.

Everything a user can get wrong is checked before the terminal is taken over (no DSN, a malformed
one, an unreachable server, a missing schema, a bad --refresh), and answered as code, cause and a
one-line fix on stderr with a non-zero exit. A DSN's password is never printed (I25).
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

import typer

from engine.errors import X_DSN_INVALID, X_INVALID_ARGUMENT, JobsError
from engine.read_only_env import READ_ONLY_ENV, env_read_only  # one switch, one parser, for jobsctl too

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
REFRESH_MIN, REFRESH_MAX = 0.25, 3600.0
DSN_HELP = "PostgreSQL DSN (URL or key=value); defaults to $JOBS_DSN"


app = typer.Typer(
    name="jobs-console",
    help="The jobs operations console. `jobs-console demo` opens it on a live embedded demo.",
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


# As `jobs` reads them (engine/cli/admin.py): one setting for every process behind the pooler.
PREPARED_ENV = "JOBS_NO_PREPARED_STATEMENTS"
PREPARED_HELP = "prepare no statement: for a DSN that goes through PgBouncer in transaction mode"
READ_ONLY_HELP = f"offer no mutating action (the engine refuses them too); default ${READ_ONLY_ENV} (1, true, yes, on)"


@dataclass(frozen=True)
class Options:
    read_only: bool = False
    refresh: float = 2.0
    queue: str | None = None
    name: str | None = None
    app: str | None = None  # the module declaring the app's backfills
    environment: str | None = None
    prepared_statements: bool = True  # False: prepare none (a DSN through PgBouncer in transaction mode)


# --- checking input ---------------------------------------------------------------------------

_REFRESH = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_KV_PASSWORD = re.compile(r"password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def parse_refresh(text: str) -> float:
    """'2s', '500ms', '1m' or a bare number of seconds, between 0.25 s and one hour."""
    m = _REFRESH.match(text or "")
    if not m:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"--refresh {text!r} is not a duration like 2s, 500ms or 1m",
            fix="jobs-console --refresh 2s",
        )
    seconds = float(m.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}[m.group(2)]
    if not REFRESH_MIN <= seconds <= REFRESH_MAX:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"--refresh {text!r} is {seconds:g}s; it must be between {REFRESH_MIN:g}s and 1h",
            fix="jobs-console --refresh 2s",
        )
    return seconds


def password_of(dsn: str) -> str | None:
    """The password a DSN carries (URL or key=value form), found without parsing it for real, so
    even a DSN too malformed to parse has its password kept out of every message."""
    if "://" in dsn:
        netloc = dsn.split("://", 1)[1].split("/", 1)[0]
        if "@" in netloc:
            userinfo = netloc.rsplit("@", 1)[0]
            if ":" in userinfo:
                return userinfo.split(":", 1)[1] or None
        try:
            return urlsplit(dsn).password
        except ValueError:
            return None
    m = _KV_PASSWORD.search(dsn)
    if m:
        value = m.group(1)
        return value[1:-1] if value.startswith("'") else value
    return None


def scrub(text: str, dsn: str | None) -> str:
    """Replace the DSN's password (raw and URL-decoded) wherever it appears in ``text``."""
    from urllib.parse import unquote

    secret = password_of(dsn) if dsn else None
    for s in {secret, unquote(secret) if secret else None}:
        if s:
            text = text.replace(s, "***")
    return text


def resolve_dsn(dsn: str | None) -> str:
    value = dsn if dsn is not None else os.environ.get("JOBS_DSN")
    if value is None or not value.strip():
        where = "--dsn is empty" if dsn is not None else "no --dsn was given and $JOBS_DSN is not set"
        raise JobsError(X_DSN_INVALID, cause=where, fix="jobs-console --dsn postgresql://USER@HOST:5432/DBNAME")
    if value.strip().startswith("memory:"):
        # A memory engine in a fresh process holds nothing: the console would watch an empty shelf.
        raise JobsError(
            X_DSN_INVALID,
            cause="a memory:// engine lives inside one process; this console would see no jobs",
            fix="jobs-console demo",
        )
    # A malformed DSN (a port that is not a number among them) is the engine's X_DSN_INVALID,
    # raised when the source opens it (engine/drivers/postgres/pool.py, check_dsn): one
    # classification for the engine, the CLI and the console.
    return value.strip()


def report(err: JobsError, dsn: str | None = None) -> None:
    sys.stderr.write(scrub(f"error {err.code}: {err.cause}\n  fix: {err.fix}\n  docs: {err.docs}\n", dsn))


# --- opening ----------------------------------------------------------------------------------


def open_source(dsn: str, opts: Options):  # type: ignore[no-untyped-def]
    """Connect, check the schema, and answer the console's Source (raises JobsError)."""
    from console.source import open_source as source_for_dsn

    try:
        return source_for_dsn(
            dsn,
            read_only=opts.read_only,
            app=opts.app,
            environment=opts.environment,
            prepared_statements=opts.prepared_statements,
            queue=opts.queue,
        )
    except JobsError as err:
        if err.code == X_DSN_INVALID:  # the driver's fix names the Python API; ours names this command
            raise JobsError(
                X_DSN_INVALID, cause=err.cause, fix="jobs-console --dsn postgresql://USER@HOST:5432/DBNAME"
            ) from None
        raise


def make_app(source, opts: Options, cli_dsn: str | None = None):  # type: ignore[no-untyped-def]
    from console.app import JobsConsole

    return JobsConsole(source, refresh=opts.refresh, queue=opts.queue, title=opts.name, cli_dsn=cli_dsn)


def exit_like(console) -> None:  # type: ignore[no-untyped-def]
    """A console that ended on an unhandled exception exits non-zero (Textual prints the
    traceback and sets ``return_code``), so a crash never reads as a clean quit."""
    code = console.return_code
    if code:
        raise typer.Exit(code if isinstance(code, int) and code > 0 else EXIT_ERROR)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as installed

        try:
            typer.echo(f"jobs-console {installed('jobs')}")
        except PackageNotFoundError:  # run from a checkout that was never installed
            typer.echo("jobs-console (not installed: no version)")
        raise typer.Exit(EXIT_OK)


@app.callback()
def main_command(
    ctx: typer.Context,
    dsn: str = typer.Option(None, "--dsn", help=DSN_HELP, show_default=False),
    read_only: bool = typer.Option(False, "--read-only", help=READ_ONLY_HELP),
    refresh: str = typer.Option(
        "2s", "--refresh", help="refresh interval: 2s, 500ms, 1m (adjustable live with + and -)"
    ),
    queue: str = typer.Option(
        None,
        "--queue",
        help="open on the Overview with the cursor on this queue; Jobs and Dead letters open filtered to it",
        show_default=False,
    ),
    name: str = typer.Option(
        None, "--name", help="a label for this database in the header, e.g. prod-eu", show_default=False
    ),
    version: bool = typer.Option(
        False, "--version", help="print the version and exit", callback=_version, is_eager=True
    ),
    app_module: str = typer.Option(
        None,
        "--app",
        help="the module declaring the app's backfills, as for `jobsctl backfill --app` (default $JOBS_APP)",
        show_default=False,
    ),
    env: str = typer.Option(
        None, "--env", help="this deployment's environment (default $JOBS_ENV, else development)", show_default=False
    ),
    no_prepared_statements: bool = typer.Option(
        False, "--no-prepared-statements", envvar=PREPARED_ENV, help=PREPARED_HELP
    ),
) -> None:
    """Open the console on a jobs database (`--dsn` or $JOBS_DSN)."""
    try:
        opts = Options(
            read_only=env_read_only(os.environ.get(READ_ONLY_ENV)) or read_only,  # a bad word refused either way
            refresh=parse_refresh(refresh),
            queue=queue,
            name=name,
            app=app_module or os.environ.get("JOBS_APP") or None,
            environment=env,
            prepared_statements=not no_prepared_statements,
        )
        if ctx.invoked_subcommand == "demo" and dsn is not None:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause="--dsn was given to the demo, which runs on its own throwaway database",
                fix="jobs-console demo",
            )
        if ctx.invoked_subcommand == "demo" and no_prepared_statements:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause="--no-prepared-statements (or $JOBS_NO_PREPARED_STATEMENTS) was given to the demo, which "
                "talks to its own server, never through a pooler",
                fix=f"unset {PREPARED_ENV}; jobs-console demo",
            )
        if ctx.invoked_subcommand == "demo" and (app_module or env):
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause="--app/--env were given to the demo, which declares its own backfills "
                "(console.demo.accounts) in production",
                fix="jobs-console demo",
            )
    except JobsError as err:
        report(err)
        raise typer.Exit(EXIT_USAGE) from None
    ctx.obj = opts
    if ctx.invoked_subcommand is not None:
        return
    target: str | None = None
    try:
        target = resolve_dsn(dsn)
        source = open_source(target, opts)
    except JobsError as err:
        if dsn is not None:  # the fix names the database this command was given, not $JOBS_DSN's
            from console.source import naming_given_dsn

            err = naming_given_dsn(err, dsn)
        report(err, target or dsn)
        raise typer.Exit(EXIT_USAGE if err.code == X_DSN_INVALID else EXIT_ERROR) from None
    try:
        console = make_app(source, opts)
        console.run()
    finally:
        source.engine.close()
    exit_like(console)


@app.command()
def demo(
    ctx: typer.Context,
    memory: bool = typer.Option(False, "--memory", help="use the memory driver instead of the embedded PostgreSQL"),
    seed: int = typer.Option(7, "--seed", help="the traffic generator's seed"),
) -> None:
    """Open the console on a live demo: a real engine and worker on a throwaway PostgreSQL."""
    from console.demo.app import Demo

    opts: Options = ctx.obj or Options()
    # The console's imports (Textual, the screens: ~0.3 s) overlap initdb, a subprocess.
    warm = threading.Thread(target=importlib.import_module, args=("console.app",), daemon=True)
    warm.start()
    try:
        running = Demo(seed=seed, force_memory=memory, read_only=opts.read_only, queue=opts.queue).start()
    except JobsError as err:
        report(err)
        raise typer.Exit(EXIT_ERROR) from None
    warm.join()
    typer.echo(running.announce(), err=True)
    built: list = []  # type: ignore[type-arg]

    def build(source):  # type: ignore[no-untyped-def]
        built.append(make_app(source, opts, running.dsn))  # shown in the console: it covers the line above
        return built[-1]

    try:
        running.run(build)
    finally:
        running.stop()
    if built:
        exit_like(built[-1])


def main() -> None:
    app()
