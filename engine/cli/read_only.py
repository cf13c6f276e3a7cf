"""Read-only mode: `jobsctl --read-only COMMAND`, or $JOBS_READ_ONLY=1 (which `jobs-console` reads
too, with the same parser: engine/read_only_env.py), refuses every command that would change the
database before it connects, and runs every read as before.

One table, COMMANDS, says of every command (by its path: `retry`, `workers drain`) whether an
invocation of it writes: READS, or a function of its parsed parameters answering the change it
would make (a Change), or None for a form that only reads (`migrate --sql`, `backfill --status`).
The root wraps every command's callback in `guarded` (engine/cli/__init__.py, Root), so the
refusal comes before the command's own code: before its app is imported or a connection opened.
A command the table does not name is refused in read-only mode as a write would be, and a test
walks every registered command so that none is left out (`unclassified`).

A bulk (`retry --all`, `cancel ID --children`) reads its dry run first: a Change with
``after_dry_run`` lets that run and print, and `refused_after_dry_run` answers the refusal where
the command would ask its question (engine/cli/acting.py, dry_run_only), so the on-call engineer
still sees what it would do."""

from __future__ import annotations

import functools
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.errors import X_READ_ONLY, JobsError
from engine.read_only_env import READ_ONLY_ENV, env_read_only

READ_ONLY_HELP = (
    "refuse every command that would change the database (the actions, enqueue, migrate, worker, relay, "
    "scheduler, starting a backfill pass) before it connects; reads and dry runs work as before. "
    f"${READ_ONLY_ENV}=1 does the same, for jobs-console too"
)


@dataclass(frozen=True)
class Change:
    """What an invocation would change, said after the command (``would retry job ID``).
    ``after_dry_run``: it reads a dry run first, which runs; the change after it is refused."""

    what: str
    after_dry_run: bool = False


Classifier = Callable[[Mapping[str, Any]], Change | None]


def READS(params: Mapping[str, Any]) -> Change | None:  # noqa: N802  (the table reads as words)
    return None


def writes(what: str) -> Classifier:
    return lambda params: Change(what)


def _job_action(verb: str) -> Classifier:
    """retry, cancel, discard: one job at once; --all or --children after the dry run."""

    def change(p: Mapping[str, Any]) -> Change:
        if p.get("all_"):
            return Change(f"would {verb} every job its filter matches", after_dry_run=True)
        if p.get("children"):
            return Change(f"would {verb} job {p.get('job_id')} and the jobs below it", after_dry_run=True)
        return Change(f"would {verb} job {p.get('job_id')}")

    return change


def _migrate(p: Mapping[str, Any]) -> Change | None:
    return None if p.get("sql") or p.get("status") else Change("would apply the pending schema migrations")


def _backfill(p: Mapping[str, Any]) -> Change | None:
    name = p.get("name")
    if name is None or p.get("pending") or p.get("status") or p.get("history"):
        return None
    if p.get("cancel") or p.get("retry"):
        return Change(f"would {'cancel' if p.get('cancel') else 'retry'} the pass of backfill {name!r}")
    mode = "write" if p.get("write") else "dry-run"  # a dry-run pass too is a job and a ledger row
    return Change(f"would start a {mode} pass of backfill {name!r} (it enqueues a job and writes a ledger row)")


# Every command, by its path under jobsctl: what an invocation of it changes.
COMMANDS: dict[str, Classifier] = {
    "queues": READS,
    "ls": READS,
    "show": READS,
    "dead": READS,
    "why": READS,
    "describe": READS,
    "wait": READS,
    "children": READS,
    "outbox": READS,
    "workers": READS,
    "schedule": READS,
    "audit": READS,
    "retry": _job_action("retry"),
    "cancel": _job_action("cancel"),
    "discard": _job_action("discard"),
    "pause": writes("would pause a queue"),
    "resume": writes("would resume a queue"),
    "event": writes("would send an event (and wake the waits it matches)"),
    "enqueue": writes("would enqueue a job"),
    "workers drain": writes("would ask a worker to drain"),
    "schedule pause": writes("would pause a cron task"),
    "schedule resume": writes("would resume a cron task"),
    "schedule trigger": writes("would enqueue an occurrence of a cron task"),
    "backfill": _backfill,
    "migrate": _migrate,
    "install": _migrate,
    "worker": writes("would run a worker (it registers itself and claims, runs and settles jobs)"),
    "relay": writes("would run an outbox relay (it publishes staged rows as jobs)"),
    "scheduler": writes("would run the cron scheduler (it enqueues the tasks' occurrences)"),
}


@dataclass
class ReadOnly:
    """This invocation's read-only mode, set by the root command (set_read_only)."""

    on: bool = False
    by: str = ""  # why it is on, for the cause: "--read-only was given", "JOBS_READ_ONLY=1 is set"
    env_on: bool = False  # $JOBS_READ_ONLY is on: the fix turns it off
    words: tuple[str, ...] = ()  # the command line after the program's name, --read-only left out
    as_json: bool = False  # the invocation asked for JSON
    pending: JobsError | None = None  # the refusal a bulk answers after its dry run


STATE = ReadOnly()


def set_read_only(flag: bool, env_value: str | None, words: Sequence[str], *, as_json: bool) -> None:
    """The root's --read-only and $JOBS_READ_ONLY (a word it does not take is refused, whatever
    the flag says); ``words``: the command line after the program's name, for the fix."""
    env_on = env_read_only(env_value)
    said = f"{READ_ONLY_ENV}={(env_value or '').strip()} is set"
    STATE.on, STATE.env_on, STATE.as_json, STATE.pending = flag or env_on, env_on, as_json, None
    STATE.by = ("--read-only was given" + (f" and {said}" if env_on else "")) if flag else said
    STATE.words = tuple(words)


def reset_read_only() -> None:
    """Read-only mode off again, once the invocation that set it has ended (its state is no
    other caller's: a test calling a command's helpers after it, a second invocation)."""
    STATE.on, STATE.env_on, STATE.pending, STATE.by, STATE.words = False, False, None, "", ()


def _shown(words: Sequence[str]) -> list[str]:
    """``words`` as a fix may repeat them: a --dsn's password left out (shown_dsn)."""
    from engine.drivers.postgres.dsn import shown_dsn

    def dsn(value: str) -> str:
        return value if value.strip().startswith("memory:") else shown_dsn(value)

    out: list[str] = []
    for i, w in enumerate(words):
        if i and words[i - 1] == "--dsn":
            out.append(dsn(w))
        elif w.startswith("--dsn="):
            out.append("--dsn=" + dsn(w.partition("=")[2]))
        else:
            out.append(w)
    return out


def typed_with(flag: str, value: str) -> str | None:
    """The command as it was typed with ``flag``'s value (``--flag V`` or ``--flag=V``) replaced
    by ``value``, as a fix repeats it; None when the command gave no such flag."""
    words, found = list(STATE.words), False
    for i, w in enumerate(words):
        if i and words[i - 1] == flag:
            words[i], found = value, True
        elif w.startswith(flag + "="):
            words[i], found = f"{flag}={value}", True
    return shlex.join(["jobsctl", *_shown(words)]) if found else None


def fix() -> str:
    """The command as it was typed, out of read-only mode: without --read-only, and under
    JOBS_READ_ONLY=0 when the variable turned it on."""
    line = shlex.join(["jobsctl", *_shown(STATE.words)])
    return f"{READ_ONLY_ENV}=0 {line}" if STATE.env_on else line


def refusal(sub: str, change: Change) -> JobsError:
    """The refusal of ``change`` by the command being run, ``sub`` (its path: `workers drain`)."""
    done = "its dry run is all it did" if change.after_dry_run else "nothing was changed"
    return JobsError(X_READ_ONLY, cause=f"read-only ({STATE.by}): `jobsctl {sub}` {change.what}; {done}", fix=fix())


def refused_after_dry_run() -> JobsError | None:
    """The refusal of a bulk's change, once its dry run has been read and printed (None: it may
    go on)."""
    return STATE.pending if STATE.on else None


def check(path: str, params: Mapping[str, Any]) -> None:
    """Refuse ``path`` invoked with ``params`` when it would change the database in read-only
    mode (a bulk: after its dry run, refused_after_dry_run); a command COMMANDS does not name
    counts as one that writes."""
    if not STATE.on:
        return
    classify = COMMANDS.get(path)
    change = Change("is not known to only read") if classify is None else classify(params)
    if change is None:
        return
    if change.after_dry_run:
        STATE.pending = refusal(path, change)
        return
    from engine.cli import fail

    fail(refusal(path, change), as_json=STATE.as_json)


def guarded(path: str, callback: Callable[..., Any]) -> Callable[..., Any]:
    """``callback``, a command's, checked (check) before it runs."""

    @functools.wraps(callback)
    def call(*args: Any, **params: Any) -> Any:
        check(path, params)
        return callback(*args, **params)

    return call


def commands(group: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Every command under a click group, by its path (``workers drain``), groups included."""
    out: list[tuple[str, Any]] = []
    for name, cmd in getattr(group, "commands", {}).items():
        path = f"{prefix} {name}".strip()
        out.append((path, cmd))
        out.extend(commands(cmd, path))
    return out


def guard_all(root: Any) -> None:
    """Wrap every command's callback under ``root`` in guarded (once: the root is built once per run)."""
    for path, cmd in commands(root):
        if cmd.callback is not None and not getattr(cmd.callback, "read_only_guarded", False):
            cmd.callback = guarded(path, cmd.callback)
            cmd.callback.read_only_guarded = True


def unclassified(root: Any) -> list[str]:
    """The commands under ``root`` that COMMANDS does not name."""
    return [path for path, _ in commands(root) if path not in COMMANDS]
