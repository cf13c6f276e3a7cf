"""What every command shares: the DSN option and where it comes from, and what every connection
the command opens carries (its timeouts; whether it prepares statements).

A frozen or unreachable server must answer a command with a coded error in a few seconds, never
hang it: every connection waits at most the connect timeout for the server, and every statement
of a one-shot command (a read, an action) is cut off by the server past the statement timeout.
Both are set on the root command (`jobsctl --connect-timeout 3 queues`) or in the environment
($JOBS_CONNECT_TIMEOUT, $JOBS_STATEMENT_TIMEOUT). The long-running commands (worker, relay,
scheduler) and migrate get the connect timeout but no statement timeout unless one is given: a
migration's index build or a worker's busy claim may rightly take longer than a read.

Behind PgBouncer in transaction mode a prepared statement meets other server sessions:
`jobsctl --no-prepared-statements COMMAND` (or $JOBS_NO_PREPARED_STATEMENTS=1, which `jobs-console`
and the long-running commands' own flag read too) prepares none.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from dataclasses import dataclass
from typing import Any

import typer

from engine.errors import X_DSN_INVALID, X_INVALID_ARGUMENT, X_NOT_IMPLEMENTED, JobsError
from engine.options import LONGEST_TIMEOUT_MS, finite_positive
from engine.text import unstorable

DSN_HELP = "PostgreSQL DSN (URL or key=value); defaults to $JOBS_DSN"
JSON_HELP = "print JSON instead of a table (errors as JSON on stderr)"
APP_HELP = "the module holding the @job handles (default $JOBS_APP)"
TENANT_HELP = "only this tenant's jobs: another tenant's job is not found"
STOP_WAIT = 10.0  # seconds a signalled start is cancelled again and again until it ends
NOTE_HELP = "a note kept in the audit with who and when (an incident number, a reason)"
DSN_EXAMPLE = "postgresql://USER@HOST:5432/DBNAME"
PREPARED_ENV = "JOBS_NO_PREPARED_STATEMENTS"
PREPARED_HELP = "prepare no statement: for a DSN that goes through PgBouncer in transaction mode"


def no_prepared_statements_option() -> Any:
    """The --no-prepared-statements option, read from $JOBS_NO_PREPARED_STATEMENTS too: the
    root command's and the long-running commands' own, one declaration."""
    return typer.Option(False, "--no-prepared-statements", envvar=PREPARED_ENV, help=PREPARED_HELP)


CONNECT_TIMEOUT = 5  # seconds a connection waits for the server
STATEMENT_TIMEOUT = 10.0  # seconds a one-shot command's statement may run
MAX_STATEMENT_MS = LONGEST_TIMEOUT_MS  # PostgreSQL's statement_timeout is an int of milliseconds
CONNECT_HELP = (
    f"seconds each connection waits for the server before the command fails (whole seconds, at least 2; default "
    f"{CONNECT_TIMEOUT}, or the DSN's own connect_timeout; given, it wins over the DSN's)"
)
STATEMENT_HELP = (
    f"seconds a statement may run before the server cancels it; default {STATEMENT_TIMEOUT:g} for reads and "
    "actions, none for worker, relay, scheduler and migrate unless given; 0: none; given, it wins over the DSN's own"
)


CONNECT_ENV, STATEMENT_ENV = "JOBS_CONNECT_TIMEOUT", "JOBS_STATEMENT_TIMEOUT"  # the root's timeouts, read unless given


@dataclass
class Connections:
    """The root command's settings for every connection of the command it runs (set once per
    invocation)."""

    connect: int | None = None  # None: not given (CONNECT_TIMEOUT, unless the DSN has its own)
    statement: float | None = None  # None: not given (the command's default)
    command: str | None = None  # the subcommand being run, for a fix that names it
    prepared: bool = True  # False: --no-prepared-statements
    dsn: str | None = None  # the DSN given by --dsn, as typed (None: $JOBS_DSN, or none read yet)
    from_env: tuple[str, ...] = ()  # the variables (JOBS_CONNECT_TIMEOUT, ...) a timeout above was read from


CONNECTIONS = Connections()


def set_connections(
    connect: int | None,
    statement: float | None,
    command: str | None,
    *,
    prepared: bool = True,
    from_env: tuple[str, ...] = (),
) -> None:
    if connect is not None and connect < 2:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"--connect-timeout {connect} is below 2 s, libpq's floor (it would wait 2 s anyway)",
            fix=f"jobsctl --connect-timeout 2 {command or 'queues'}",
        )
    if statement is not None and statement != 0 and not (finite_positive(statement) and statement >= 0.001):
        # Below 1 ms it would reach the server as 0 ms: no timeout at all.
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"--statement-timeout {statement:g} must be 0 (none) or a finite number of seconds >= 0.001",
            fix=f"jobsctl --statement-timeout 10 {command or 'queues'}",
        )
    if statement is not None and statement * 1000 > MAX_STATEMENT_MS:
        # The server refuses the connection itself over a larger value, which would read as unreachable.
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"--statement-timeout {statement:g} is past the server's ceiling of {MAX_STATEMENT_MS // 1000:,} s "
            "(about 24 days); 0 is no timeout",
            fix=f"jobsctl --statement-timeout 0 {command or 'queues'}",
        )
    CONNECTIONS.connect, CONNECTIONS.statement, CONNECTIONS.command = connect, statement, command
    CONNECTIONS.prepared, CONNECTIONS.dsn, CONNECTIONS.from_env = prepared, None, from_env


def group_given(ctx: typer.Context, dsn: str | None, json_out: bool) -> tuple[str | None, bool]:
    """A subcommand's --dsn and --json, or its group's given before the subcommand's name: `jobs
    workers --dsn X drain ID` means what `jobsctl workers drain ID --dsn X` does. Two different
    --dsn, one each side of the name, are refused."""
    from engine.cli import fail

    up = ctx.parent.params if ctx.parent is not None else {}
    theirs, as_json = up.get("dsn"), json_out or bool(up.get("json_out"))
    if dsn is not None and theirs is not None and dsn != theirs:
        group = ctx.parent.info_name if ctx.parent is not None else "jobsctl"
        fail(
            JobsError(
                X_INVALID_ARGUMENT,
                cause=f"--dsn is given twice, before and after `{ctx.info_name}`, with different values",
                fix=f"jobsctl {group} {ctx.info_name} ... --dsn DSN",
            ),
            as_json=as_json,
        )
    return dsn if dsn is not None else theirs, as_json


def refuse_for_subcommand(ctx: typer.Context, option: str, what: str, *, as_json: bool) -> None:
    """Refuse a group's ``option`` given with a subcommand that has no use for it (it ``what``)."""
    from engine.cli import fail

    source = ctx.get_parameter_source(option)
    if source is not None and source.name != "DEFAULT":
        sub, flag = ctx.invoked_subcommand, "--" + option.replace("_", "-")
        fail(
            JobsError(
                X_INVALID_ARGUMENT,
                cause=f"{flag} {what}; `{sub}` has no use for it: leave {flag} out of the line",
                fix=f"jobsctl {ctx.info_name} {sub} ...",
            ),
            as_json=as_json,
        )


MAX_PORT = 65535
METRICS_HOST_HELP = "the metrics address, with --metrics-port (default 127.0.0.1: loopback)"


def metrics_address(port: int | None, host: str | None, command: str) -> tuple[int | None, str]:
    """--metrics-port and --metrics-host as a command serves them: a port must be positive, and
    a host without a port would serve nothing, so each is refused with the command's fix."""
    if port is not None and not 0 < port <= MAX_PORT:
        # Refused now: a port no socket can take would otherwise fail only once the database answers.
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"--metrics-port {port} must be positive"
            if port <= 0
            else f"--metrics-port {port} is past {MAX_PORT}",
            fix=f"{command} --metrics-port 9464",
        )
    if host is not None and not host.strip():
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"--metrics-host {host!r} names no address",
            fix=f"{command} --metrics-port {port or 9464} --metrics-host 127.0.0.1",
        )
    if host is not None and port is None:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"--metrics-host {host} with no --metrics-port serves nothing",
            fix=f"{command} --metrics-port 9464 --metrics-host {host}",
        )
    return port, host or "127.0.0.1"


def served_metrics(
    metrics: Any, port: int | None, host: str, *, as_json: bool, health: Any = None
) -> tuple[object | None, bool]:
    """A long-running command's metrics endpoint (None when no port was given) and whether it
    could be served: a port taken or an address not this host's is said, as JSON with --json."""
    if not port:
        return None, True
    from engine.cli import say_error
    from engine.runtime.metrics import serve_metrics

    try:
        return serve_metrics(metrics, port, host, health=health), True
    except JobsError as err:
        say_error(err, as_json=as_json)
        return None, False


def dsn_fix() -> str:
    """X_DSN_INVALID's fix: the command being run with a DSN of the right shape."""
    return f"jobsctl {CONNECTIONS.command or 'queues'} --dsn {DSN_EXAMPLE}"


def fix_naming_given_dsn(fix: str) -> str:
    """``fix`` with the DSN this command was given by --dsn where it says "$JOBS_DSN"
    (engine/drivers/postgres/dsn.py, naming_dsn)."""
    from engine.drivers.postgres.dsn import naming_dsn

    return fix if CONNECTIONS.dsn is None else naming_dsn(fix, CONNECTIONS.dsn)


def _timed_memory() -> JobsError:
    """A timeout given to a command on memory://, which opens no connection: the cause says where
    each came from, and the fix unsets the variables it was read from (a command line without the
    flag would read them again), else is the command without the flag."""
    timed = [
        (flag, var, value)
        for flag, var, value in (
            ("--connect-timeout", CONNECT_ENV, CONNECTIONS.connect),
            ("--statement-timeout", STATEMENT_ENV, CONNECTIONS.statement),
        )
        if value is not None
    ]
    came = [  # the first is the flag the cause names ("it"), the second names its own
        (f"${var}={value:g} sets " if var in CONNECTIONS.from_env else f"{value:g} was given for ")
        + ("it" if n == 0 else flag)
        for n, (flag, var, value) in enumerate(timed)
    ]
    rerun = f"jobsctl {CONNECTIONS.command or 'queues'} --dsn memory://"
    return JobsError(
        X_INVALID_ARGUMENT,
        cause=f"{timed[0][0]} (a flag or its environment variable) times connections, and memory:// opens none: "
        + ", and ".join(came),
        fix=f"unset {' '.join(CONNECTIONS.from_env)} && {rerun}" if CONNECTIONS.from_env else rerun,
    )


def resolve_dsn(dsn: str | None, *, long_running: bool = False) -> str:
    """The DSN to use (--dsn, else $JOBS_DSN), carrying this command's timeouts: one given by flag
    or environment wins over the DSN's own; a default fills only what the DSN leaves out."""
    CONNECTIONS.dsn = dsn or None
    value = dsn or os.environ.get("JOBS_DSN")
    if not value:
        raise JobsError(
            X_DSN_INVALID,
            cause="no DSN was given and $JOBS_DSN is not set",
            fix=f"export JOBS_DSN={DSN_EXAMPLE}",
        )
    why = unstorable(value)
    if why is not None:  # what libpq could never be sent; the DSN is not shown, it may hold a password
        raise JobsError(X_DSN_INVALID, cause=f"the DSN holds {why}", fix=dsn_fix())
    if value.strip().startswith("memory:"):
        if CONNECTIONS.connect is not None or CONNECTIONS.statement is not None:
            raise _timed_memory()
        return value
    from engine.drivers.postgres.dsn import with_timeouts

    given = CONNECTIONS.statement is not None
    statement = CONNECTIONS.statement if given else None if long_running else STATEMENT_TIMEOUT
    try:
        return with_timeouts(
            value,
            connect_timeout=CONNECT_TIMEOUT if CONNECTIONS.connect is None else CONNECTIONS.connect,
            statement_timeout_ms=None if statement is None else int(statement * 1000),
            connect_given=CONNECTIONS.connect is not None,
            statement_given=given,
        )
    except JobsError as err:
        # The driver's fix names the API (X_DSN_INVALID) or $JOBS_DSN (another storage's URL, which
        # a --dsn on the command line would still override): this names the command with a DSN.
        if err.code == X_DSN_INVALID or (err.code == X_NOT_IMPLEMENTED and CONNECTIONS.dsn is not None):
            raise JobsError(err.code, cause=err.cause, fix=dsn_fix()) from None
        raise


def driver_options(*, no_prepared_statements: bool = False) -> dict[str, Any]:
    """The driver options of this invocation's connections: none, or no prepared statements
    (the root's --no-prepared-statements, $JOBS_NO_PREPARED_STATEMENTS or the command's own flag).
    The memory driver takes no option: it refuses this one by name."""
    return {"prepared_statements": False} if no_prepared_statements or not CONNECTIONS.prepared else {}


def long_running_driver(dsn: str | None, *, no_prepared_statements: bool, command: str, own_work: bool = False) -> Any:
    """The driver of a long-running command (worker, relay, scheduler): its DSN as resolve_dsn
    gives it, built before the loop starts, so a driver option the DSN cannot take (the memory
    driver's) is refused with the command's other bad input. memory:// is the process's own
    store, which no other process can enqueue or stage into: refused, unless the command makes
    its own work there (``own_work``: a worker leading the scheduler of its module's cron tasks)."""
    from engine.api import open_driver

    options = driver_options(no_prepared_statements=no_prepared_statements)
    driver = open_driver(resolve_dsn(dsn, long_running=True), **options)
    if driver.kind == "memory" and not own_work:
        raise JobsError(
            X_DSN_INVALID,
            cause=f"memory:// is the {command.split()[1]} process's own store: no other process can enqueue or stage "
            "into it, so it would wait for ever",
            fix=f"{command} --dsn {DSN_EXAMPLE}",
        )
    return driver


START_HELP = "give up starting after this long if the database does not answer (s; default: wait as long as it takes)"


def config_from_flags(make: Any, command: str, flags: dict[str, str], **values: Any) -> Any:
    """``make(**values)``, a service's config built from this command's flags (``flags``: each
    field's flag). Its refusal names a field and gives a Python call as the fix
    (``RelayConfig batch_size=0 ...``, ``RelayConfig(batch_size=250)``); here it names the flag and
    the fix is this command with it (``--batch-size 0 ...``, ``jobsctl relay --batch-size 250``)."""
    try:
        return make(**values)
    except JobsError as err:
        call = re.fullmatch(r"\w+\((.*)\)", err.fix)
        said = re.match(r"\w+ (\w+)=", err.cause)  # the config's name, then the field it refuses
        if call is None or said is None or said.group(1) not in flags:
            raise
        given = [kv.partition("=") for kv in call.group(1).split(", ")]
        if any(field not in flags for field, _, _ in given):
            raise
        cause = err.cause[said.start(1) :]
        for field, flag in flags.items():
            cause = re.sub(rf"\b{field}=", f"{flag} ", cause)
        fix = " ".join([command, *(f"{flags[field]} {value}" for field, _, value in given)])
        raise JobsError(err.code, cause=cause, fix=fix, docs=err.docs, meta=err.meta) from None


def check_start_timeout(value: float | None, command: str) -> None:
    if value is not None and not value > 0:
        raise JobsError(
            X_INVALID_ARGUMENT, cause=f"--start-timeout {value:g} must be positive", fix=f"{command} --start-timeout 60"
        )


async def start_when_reachable(
    driver: Any, who: str, start_timeout: float | None, *, as_json: bool = False
) -> int | None:
    """Open ``driver`` for a long-running command, waiting for the database as a worker does
    (engine/runtime/startup.py): None once open; else the exit code (0 for a SIGTERM or SIGINT
    during the wait, 1 with the engine's error on stderr when it gave up or was refused)."""
    from engine.cli import EXIT_ERROR, say_error
    from engine.runtime import aio
    from engine.runtime.startup import when_reachable

    loop = asyncio.get_running_loop()
    start = loop.create_task(when_reachable(driver.open, worker=who, start_timeout=start_timeout))
    stopping: list[asyncio.Task[Any]] = []  # cancelled until it ends: a pool checkout can lose one
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda: stopping.append(aio.cancel_until_done(start, loop.time() + STOP_WAIT)))
    try:
        await start
    except asyncio.CancelledError:
        return 0
    except JobsError as err:
        say_error(err, as_json=as_json)
        return EXIT_ERROR
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    return None
