"""Declaring backfills: ``Backfills(...)`` holds what every sweep of an app shares (its database
connection, its migration ledger, its version), and ``@bf.backfill(...)`` declares one sweep over
a ``handle(batch)`` function. Everything is checked at declaration, never at the first pass.

A backfill IS a job definition (``BackfillDefinition`` subclasses ``JobDefinition``): its pass
runs on the engine's own job and step machinery, so ``jobsctl worker myapp.backfills`` serves it like
any job, and the idempotency key makes one live pass per name (I2 gives I22's running gate).
"""

from __future__ import annotations

import difflib
import functools
import inspect
import math
import os
import re
import types as pytypes
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from engine.errors import (
    X_BACKFILL_UNKNOWN,
    X_DUPLICATE_JOB,
    X_INVALID_ARGUMENT,
    X_INVALID_DEFINITION,
    JobsError,
    unknown_option,
)
from engine.jobs import JobDefinition, refused_call
from engine.names import check_queue_name
from engine.options import seconds, seconds_rule
from engine.retry import LONGEST_DELAY, RetryPolicy
from engine.text import check_text

PASS_QUEUE = "backfills"
PASS_KEY = "pass"  # every pass of one backfill shares (job name, '', key): one live pass per name
DEFAULT_ENVIRONMENT = "development"
_NAME = re.compile(r"^[a-z][a-z0-9_.-]{0,99}$")
_OPTIONS = ("source", "count", "batch_size", "rate", "environments", "requires", "retry", "timeout")
_OWNER_OPTIONS = ("connect", "migrations", "version", "queue")


def pass_job_name(name: str) -> str:
    return f"backfill:{name}"


def resolve_environment(explicit: str | None = None) -> str:
    """This process's environment: the one given, else $JOBS_ENV, else ``development``."""
    env = explicit if explicit is not None else os.environ.get("JOBS_ENV") or DEFAULT_ENVIRONMENT
    if not isinstance(env, str) or not env.strip():
        raise JobsError(X_INVALID_ARGUMENT, cause=f"environment={env!r} is empty", fix="export JOBS_ENV=production")
    check_text(env, what="environment", fix="export JOBS_ENV=production")
    return env.strip()


@dataclass(frozen=True)
class Batch:
    """What ``handle`` receives: the rows the source read, the app's connection they were read
    on (the pass commits it after ``handle`` returns), the batch's number from 1, and the cursor
    after its last row."""

    rows: list[Any]
    conn: Any
    number: int
    cursor: Any


class Source(Protocol):
    """Reads the batch after ``after`` (None: the first): its rows and the cursor past its last row
    (a JSON value: the pass stores it in the batch's step, so a resumed pass reads on from there)."""

    def read(self, conn: Any, *, after: Any, size: int) -> tuple[list[Any], Any]: ...


MigrationReader = Callable[[Any], Collection[str]]


@dataclass(frozen=True, eq=False)
class BackfillDefinition(JobDefinition):
    backfill: str
    source: Source
    count: Callable[[Any], int]
    handle: Callable[[Batch], Any]
    batch_size: int
    rate: float | None  # batches a second; None: as fast as the database answers
    environments: tuple[str, ...]  # empty: every environment
    requires: str | None
    owner: Backfills

    gated: ClassVar[bool] = True  # a pass starts through BackfillControl.start, past every gate (I22)

    def gate_refusal(self) -> JobsError:
        skips = "the gates a start passes first (its environments, its migration, a pass applied or live)"
        cause = f"job {self.name!r} is backfill {self.backfill!r}'s pass: a plain enqueue of it would skip {skips}"
        return JobsError(X_INVALID_ARGUMENT, cause=cause, fix=self.command("--write"))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calling the handle calls ``handle(batch)`` itself (handy in unit tests of app code)."""
        return self.handle(*args, **kwargs)

    def applies_to(self, environment: str) -> bool:
        return not self.environments or environment in self.environments

    @property
    def module(self) -> str:
        return getattr(self.handle, "__module__", None) or "MODULE"

    def command(self, *flags: str) -> str:
        """The exact CLI line for this backfill, for a fix."""
        return " ".join(["jobsctl backfill", self.backfill, "--app", self.module, *flags])


def _bad(name: str, what: str, fix: str) -> JobsError:
    return JobsError(X_INVALID_DEFINITION, cause=f"backfill {name!r} {what}", fix=fix)


def _refused_read(read: Callable[..., Any]) -> str | None:
    """None when a Source's ``read`` takes ``(conn, after=, size=)`` as a pass calls it, else its
    signature as text (one Python cannot read passes)."""
    try:
        sig = inspect.signature(read)
    except (TypeError, ValueError):
        return None
    try:
        sig.bind(None, after=None, size=1)
    except TypeError:
        return str(sig)
    return None


def _check_calls(name: str, source: Any, count: Any) -> None:
    """The source and count take what a pass hands them (engine/backfills/passes.py), checked
    here: one that cannot would fail the pass's first batch, after the gates let it start."""
    read = getattr(source, "read", None)
    sig = _refused_read(read) if callable(read) else refused_call(source, 3)
    if sig is not None:
        shape = "read(conn, *, after, size)" if callable(read) else "a function of (conn, after, size)"
        raise _bad(
            name,
            f"declares source={source!r:.80}, which takes {sig}, not {shape}",
            f"@bf.backfill(name={name!r}, source=lambda conn, after, size: ([], after), ...)",
        )
    if (sig := refused_call(count, 1)) is not None:
        raise _bad(
            name,
            f"declares count={count!r:.80}, which takes {sig}, not one argument (the connection)",
            f"@bf.backfill(name={name!r}, count=lambda conn: ..., ...)",
        )


def _check_environments(name: str, environments: Any) -> tuple[str, ...]:
    """The environments a backfill declares, each a name a process can be in: a process's
    environment is stripped (``resolve_environment``), so ' production' would never apply."""
    fix = f"@bf.backfill(name={name!r}, environments=['staging', 'production'], ...)"
    if isinstance(environments, str):
        environments = [environments]
    if not isinstance(environments, Iterable):
        raise _bad(name, f"declares environments={environments!r}, not a list of names", fix)
    envs = tuple(environments)
    for e in envs:
        if not isinstance(e, str) or not e or e != e.strip():
            raise _bad(
                name,
                f"declares environments={list(envs)!r}; each is a non-empty name with no space around it "
                f"({e!r} would match no environment)",
                fix,
            )
        check_text(e, what=f"backfill {name!r} declares environment", fix=fix, code=X_INVALID_DEFINITION)
    return envs


def _check_rate(name: str, rate: Any) -> float | None:
    if rate is None:
        return None
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate) or not rate > 0:
        raise _bad(
            name,
            f"declares rate={rate!r}; it is batches a second, a positive finite number (None: unlimited)",
            f"@bf.backfill(name={name!r}, rate=5, ...)",
        )
    if 1.0 / rate > LONGEST_DELAY:  # a pass would wait past a year between two batches
        raise _bad(
            name,
            f"declares rate={rate!r}: one batch every {1.0 / rate:.3g} s, past a year ({LONGEST_DELAY:.0f} s)",
            f"@bf.backfill(name={name!r}, rate=0.01, ...)",
        )
    return float(rate)


class Backfills:
    """An app's backfills and what they share. ``connect``: opens the app's database connection
    (a psycopg connection; the pass commits it after each batch). ``migrations``: reads the app's
    migration ledger (``django_migrations``, ``alembic_migrations(...)`` or any ``conn -> names``).
    ``version``: recorded on each ledger row (default $JOBS_APP_VERSION)."""

    def __init__(
        self,
        *,
        connect: Callable[[], Any] | None = None,
        migrations: MigrationReader | None = None,
        version: str | None = None,
        queue: str = PASS_QUEUE,
        **unknown: Any,
    ) -> None:
        if unknown:
            raise unknown_option(
                "Backfills takes no option", unknown, _OWNER_OPTIONS, "Backfills({option}=...)", "connect"
            )
        if connect is not None and (not callable(connect) or refused_call(connect, 0) is not None):
            raise JobsError(
                X_INVALID_DEFINITION,
                cause=f"connect={connect!r} is not a function of no arguments (it opens the app's connection)",
                fix="Backfills(connect=lambda: psycopg.connect(APP_DSN))",
            )
        if migrations is not None and (not callable(migrations) or refused_call(migrations, 1) is not None):
            raise JobsError(
                X_INVALID_DEFINITION,
                cause=f"migrations={migrations!r} is not a function of one argument (the app's connection)",
                fix="Backfills(migrations=django_migrations)",
            )
        check_queue_name(queue, "Backfills declares queue", f"Backfills(queue={PASS_QUEUE!r})")
        if version is not None and (not isinstance(version, str) or not version.strip()):
            raise JobsError(
                X_INVALID_DEFINITION,
                cause=f"Backfills declares version={version!r}, not a non-empty string (None: $JOBS_APP_VERSION)",
                fix="Backfills(version='2026.03.1')",
            )
        check_text(
            version, what="Backfills declares version", fix="Backfills(version='2026.03.1')", code=X_INVALID_DEFINITION
        )
        self.connect, self.migrations, self.queue = connect, migrations, queue
        # An empty $JOBS_APP_VERSION is no version, as an unset one.
        self.version = version if version is not None else os.environ.get("JOBS_APP_VERSION") or None
        self._defs: dict[str, BackfillDefinition] = {}

    def open_connection(self) -> Any:
        return None if self.connect is None else self.connect()

    def backfill(
        self,
        name: str,
        *,
        source: Source | Callable[..., tuple[list[Any], Any]],
        count: Callable[[Any], int],
        batch_size: int = 1000,
        rate: float | None = None,
        environments: Iterable[str] = (),
        requires: str | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        **unknown: Any,
    ) -> Callable[[Callable[[Batch], Any]], BackfillDefinition]:
        label = name if isinstance(name, str) else repr(name)
        if unknown:
            raise unknown_option(
                f"backfill {label!r} declares unknown option",
                unknown,
                _OPTIONS,
                f"@bf.backfill(name={label!r}, {{option}}=...)",
                "batch_size",
            )
        if not isinstance(name, str) or not _NAME.match(name):
            raise _bad(
                label,
                "needs a name of lower-case letters, digits, '_', '.', '-' (a CLI argument)",
                "@bf.backfill(name='accounts_email_lower', ...)",
            )
        if name in self._defs:
            raise JobsError(
                X_DUPLICATE_JOB, cause=f"two backfills are named {name!r}", fix=f"@bf.backfill(name='{name}_v2', ...)"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= 100_000:
            raise _bad(
                name,
                f"declares batch_size={batch_size!r}; it must be a whole number from 1 to 100000",
                f"@bf.backfill(name={name!r}, batch_size=1000, ...)",
            )
        rate = _check_rate(name, rate)
        read = getattr(source, "read", None)
        if not callable(read) and not callable(source):
            raise _bad(
                name,
                f"declares source={source!r}, which has no read(conn, after=, size=)",
                f"@bf.backfill(name={name!r}, source=keyset('accounts', 'id'), ...)",
            )
        if not callable(count):
            raise _bad(
                name,
                f"declares count={count!r}, not a function of the connection",
                f"@bf.backfill(name={name!r}, count=lambda conn: ..., ...)",
            )
        _check_calls(name, source, count)
        if getattr(source, "needs_connection", False) and self.connect is None:
            raise _bad(
                name,
                "reads a table (keyset) and its Backfills has no connect= to reach it",
                "Backfills(connect=lambda: psycopg.connect(APP_DSN))",
            )
        envs = _check_environments(name, environments)
        if requires is not None and (not isinstance(requires, str) or not requires.strip()):
            raise _bad(name, f"declares requires={requires!r}", f"@bf.backfill(name={name!r}, requires='0042_x', ...)")
        if requires is not None and self.migrations is None:
            raise _bad(
                name,
                f"requires migration {requires!r} and its Backfills has no migrations= reader",
                "Backfills(connect=..., migrations=django_migrations)",
            )
        if timeout is not None and not seconds(timeout):
            said = f"declares timeout={timeout!r}; it must be {seconds_rule()}"
            raise _bad(name, said, f"@bf.backfill(name={name!r}, timeout=3600, ...)")
        src: Source = source if callable(read) else _FunctionSource(source)  # type: ignore[arg-type, assignment]

        def wrap(handle: Callable[[Batch], Any]) -> BackfillDefinition:
            if not callable(handle):
                raise _bad(name, f"decorates {handle!r}, which is not callable", "put @bf.backfill(...) above a def")
            if (sig := refused_call(handle, 1)) is not None:
                raise _bad(
                    name,
                    f"decorates {getattr(handle, '__qualname__', handle)!s}{sig}, which cannot take one argument "
                    "(the Batch): every batch would fail",
                    "def handle(batch): ...",
                )
            from engine.backfills.passes import run_pass

            d = BackfillDefinition(
                name=pass_job_name(name),
                fn=run_pass,
                queue=self.queue,
                idempotency_key=_pass_key,
                retry=retry or RetryPolicy(attempts=3),
                timeout=float(timeout) if timeout is not None else None,
                step_timeout=None,
                event_poll=30.0,
                concurrency=None,
                rate_limit=None,
                priority=0,
                is_async=True,
                backfill=name,
                source=src,
                count=count,
                handle=handle,
                batch_size=batch_size,
                rate=rate,
                environments=envs,
                requires=requires,
                owner=self,
            )
            object.__setattr__(d, "fn", functools.partial(run_pass, d))
            self._defs[name] = d
            return d

        return wrap

    # --- the catalog --------------------------------------------------------------------------

    def get(self, name: str) -> BackfillDefinition:
        return catalog_get(self._defs, name)

    def names(self) -> list[str]:
        return sorted(self._defs)

    def __iter__(self) -> Iterator[BackfillDefinition]:
        return iter(self._defs[n] for n in self.names())

    def __len__(self) -> int:
        return len(self._defs)


def _pass_key(inp: Any) -> str:
    return PASS_KEY


class _FunctionSource:
    """A plain function ``(conn, after, size) -> (rows, cursor)`` as a Source."""

    def __init__(self, fn: Callable[..., tuple[list[Any], Any]]) -> None:
        self.fn = fn

    def read(self, conn: Any, *, after: Any, size: int) -> tuple[list[Any], Any]:
        return self.fn(conn, after, size)


class Catalog:
    """The backfills one app declares, by name, from a module, a Backfills or definitions."""

    def __init__(self, defs: Iterable[BackfillDefinition]) -> None:
        self._defs: dict[str, BackfillDefinition] = {}
        for d in defs:
            if self._defs.get(d.backfill, d) is not d:
                raise JobsError(
                    X_DUPLICATE_JOB,
                    cause=f"two backfills are named {d.backfill!r}",
                    fix=f"@bf.backfill(name='{d.backfill}_v2', ...)",
                )
            self._defs[d.backfill] = d

    @classmethod
    def of(cls, obj: Any) -> Catalog:
        if isinstance(obj, Catalog):
            return obj
        if isinstance(obj, pytypes.ModuleType):
            found: list[BackfillDefinition] = []
            for v in vars(obj).values():
                if isinstance(v, BackfillDefinition):
                    found.append(v)
                elif isinstance(v, Backfills):
                    found.extend(v)
            return cls(found)
        if isinstance(obj, Backfills):
            return cls(obj)
        if isinstance(obj, BackfillDefinition):
            return cls([obj])
        return cls(obj)

    def get(self, name: str) -> BackfillDefinition:
        return catalog_get(self._defs, name)

    def names(self) -> list[str]:
        return sorted(self._defs)

    def __iter__(self) -> Iterator[BackfillDefinition]:
        return iter(self._defs[n] for n in self.names())

    def __len__(self) -> int:
        return len(self._defs)


def catalog_get(defs: dict[str, BackfillDefinition], name: str) -> BackfillDefinition:
    try:
        return defs[name]
    except KeyError:
        pass
    known = sorted(defs)
    near = difflib.get_close_matches(name, known, n=1)
    if not known:
        cause = f"no backfill named {name!r} is declared, and this app declares none at all"
    else:
        cause = f"no backfill named {name!r} is declared (declared: {', '.join(known)})" + (
            f"; did you mean {near[0]!r}?" if near else ""
        )
    module = next(iter(defs.values())).module if defs else "MODULE"
    fix = f"jobsctl backfill {near[0]} --app {module}" if near else f"jobsctl backfill --pending --app {module}"
    raise JobsError(X_BACKFILL_UNKNOWN, cause=cause, fix=fix)


def is_async_handle(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)
