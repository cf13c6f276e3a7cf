"""What every operator command shares: the audited Operator, its answer printed a line a job, the
question before a change, the exit code of a clear no-op, and a bulk's stop on a signal."""

from __future__ import annotations

import asyncio
import shlex
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NoReturn, TypeVar

import typer

from engine.cli.admin import CONNECTIONS
from engine.cli.read_only import STATE as READ_ONLY
from engine.cli.read_only import fix as read_only_fix
from engine.cli.read_only import refused_after_dry_run
from engine.cli.reads import console, emit
from engine.errors import X_INVALID_ARGUMENT, JobsError

T = TypeVar("T")
EXIT_NOOP = 5  # the action changed nothing (already final, already paused, already asked to drain)
EXIT_STOPPED = 130  # a bulk stopped by SIGINT or SIGTERM between two batches: what landed is said
ACTOR_HELP = "who the audit trail names (default $JOBS_ACTOR or user@host)"
ID_HELP = "the job's id, or a unique short id (6+ hex digits of its head or tail)"


def operator(eng: Any, actor: str | None, **scope: Any) -> Any:
    """The engine's Operator, audited as ``actor`` (None: $JOBS_ACTOR, else user@host), whose
    refusal of a note names the command's --note option rather than the Python keyword; read-only
    in read-only mode, so the engine refuses a change too (the command refused it first).
    ``scope``: its ``tenant`` and ``budget``, for a command that reads through it (`jobsctl audit`)."""
    from engine.actions import Operator

    note_fix = f"jobsctl {CONNECTIONS.command or 'queues'} ... --note 'why, in plain text'"
    return Operator(
        eng, actor=actor or None, note_fix=note_fix, read_only=READ_ONLY.on, read_only_fix=read_only_fix(), **scope
    )


def result(res: Any, json_out: bool) -> None:
    if json_out:
        emit(res)
    else:
        said(res)
    if not res.changed:
        raise typer.Exit(EXIT_NOOP)


def said(res: Any) -> None:
    for r in (res, *res.also):  # with its children: the job, then each job below it
        console().print(
            f"{'' if r is res else '  '}{r.action} {r.job_id}: {_what(r)}" + (f"; {r.reason}" if r.reason else "")
        )


def _what(r: Any) -> str:
    """What became of the job, as ``done (before -> after)``: a discarded job has no state after
    (its row is deleted, and its result keeps the state it had)."""
    if not r.changed:
        return f"nothing changed ({r.previous.value} -> {r.state.value})"
    return f"done ({r.previous.value} -> {'deleted' if r.action == 'discard' else r.state.value})"


def confirmed(question: str) -> bool:
    """A yes to ``question`` on stdin. No answer is a no: its end (a script with nothing piped
    in, a closed terminal) or Ctrl-C at the prompt, which click would make an exit 1 "Aborted!"."""
    try:
        return typer.confirm(question, default=False)
    except (typer.Abort, EOFError):
        sys.stdout.write("\n")  # the prompt's line, left open
        return False


def typed(
    *words: str,
    filters: Sequence[str] = (),
    tenant: str | None = None,
    rate: float | None = None,
    note: str | None = None,
    actor: str | None = None,
    dsn: str | None = None,
) -> list[str]:
    """The command an operator typed, as a fix repeats it: ``words`` (jobsctl, the action and its
    flags), then each option given, quoted for a shell; a --dsn in the form a fix may show
    (engine/drivers/postgres/dsn.py, shown_dsn: never its password)."""
    from engine.drivers.postgres.dsn import shown_dsn

    said = list(words) + [f"-f {shlex.quote(f)}" for f in filters]
    given: list[tuple[str, str | None]] = [("--tenant", tenant), ("--rate", None if rate is None else f"{rate:g}")]
    given += [("--note", note), ("--actor", actor), ("--dsn", None if dsn is None else shown_dsn(dsn))]
    return said + [f"{flag} {shlex.quote(value)}" for flag, value in given if value is not None]


def not_confirmed(command: Sequence[str], *, as_json: bool) -> NoReturn:
    """A change not confirmed: nothing changed, exit EXIT_NOOP. The fix is ``command`` (typed(),
    the command as the operator typed it) with --yes, and --json under --json. Under --json no
    question is asked (a script says --yes), and the refusal is the JSON error every --json
    refusal is."""
    fix = " ".join([*command, "--yes", *(["--json"] if as_json else [])])
    if as_json:
        from engine.cli import say_error

        cause = "--json asks no question, so a change under --json needs --yes; nothing changed"
        say_error(JobsError(X_INVALID_ARGUMENT, cause=cause, fix=fix), as_json=True)
    else:
        sys.stderr.write(f"error: not confirmed; nothing changed\n  fix: {fix}\n")
    raise typer.Exit(EXIT_NOOP)


def dry_run_only(*, as_json: bool, dry_run: Any = None) -> None:
    """Between a bulk's dry run and its question: in read-only mode its change is refused here,
    the dry run being all it may do (``dry_run()`` prints it under --json, where nothing printed it
    yet); else nothing, and the question is asked."""
    refused = refused_after_dry_run()
    if refused is None:
        return
    from engine.cli import fail

    if as_json and dry_run is not None:
        dry_run()
    fail(refused, as_json=as_json)


async def stopped_by_signal(call: Callable[[asyncio.Event], Awaitable[T]]) -> T:
    """``call(stop)``, SIGINT and SIGTERM setting ``stop`` rather than cutting the call off, so a bulk
    ends between two batches and says what landed. The first signal is the only one caught: a
    second ends the process at once (the batch in flight rolls back)."""
    stop = asyncio.Event()
    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        return await call(stop)
    loop = asyncio.get_running_loop()
    signals = (signal.SIGINT, signal.SIGTERM)

    def on_signal() -> None:
        stop.set()
        sys.stderr.write("\nstopping after the batch in flight (again to stop at once)\n")
        for sig in signals:
            loop.remove_signal_handler(sig)

    for sig in signals:
        loop.add_signal_handler(sig, on_signal)
    try:
        return await call(stop)
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)


def progress_line(action: str) -> Callable[[Any], None] | None:
    """A bulk's running totals, on one line of stderr rewritten each batch, when stderr is a terminal."""
    if not sys.stderr.isatty():
        return None

    def told(r: Any) -> None:
        sys.stderr.write(f"\r{action}: {r.changed:,} changed, {r.skipped:,} skipped so far")
        sys.stderr.flush()

    return told


def no_id(action: str, filters: list[str]) -> JobsError:
    """An action given neither an id nor --all; with filter words, they act only under --all."""
    if not filters:
        return JobsError(X_INVALID_ARGUMENT, cause="no job id was given", fix=f"jobsctl {action} JOB_ID")
    words = " ".join(f"--filter {shlex.quote(f)}" for f in filters)
    return JobsError(
        X_INVALID_ARGUMENT,
        cause=f"no job id was given: a --filter alone names no job; {action} over every job it matches takes --all",
        fix=f"jobsctl {action} --all {words}",
    )
