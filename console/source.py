"""The console's only door to the engine: projections in, actions out.

It wraps ``engine.introspect``'s Introspector (reads, each under a small time budget) and
Operator (the audited, tenant-aware actions) and never knows which driver is behind them: the
console imports neither psycopg nor the postgres driver (import-linter holds it to that).

Constructing one (stable)::

    Source(engine, read_only=False, database=None, driver=None, budget=0.5, actor=None)
    open_source(dsn, read_only=False)      # connect, check the schema, answer a Source

``database`` and ``driver`` are the labels the header shows (default: the driver's own
description, password removed, and its kind). ``budget``: seconds each console query may take
(a statement timeout on Postgres). ``actor``: who the audit trail names (default
``console:<os user>``). In read-only mode every action raises X_READ_ONLY here, and the Operator
is built read-only so the engine refuses it as well.
"""

from __future__ import annotations

import asyncio
import getpass
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

from console.format import clean, database_label, redact_dsn
from engine.api import Engine, connect
from engine.errors import X_READ_ONLY, JobsError
from engine.projections import (
    ActionResult,
    BulkAction,
    BulkPlan,
    BulkResult,
    DeadLetters,
    EventSent,
    JobDetail,
    JobFilter,
    JobPage,
    QueuePause,
    QueuesView,
    WhyReport,
    WorkersView,
)

T = TypeVar("T")
DEFAULT_BUDGET = 0.5  # seconds: watching a database must never load it
PAGE_SIZE = 50


def _os_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


class Source:
    def __init__(
        self,
        engine: Engine,
        *,
        read_only: bool = False,
        database: str | None = None,
        driver: str | None = None,
        budget: float = DEFAULT_BUDGET,
        actor: str | None = None,
    ) -> None:
        from engine.introspect import Introspector, Operator

        self.engine = engine
        self.read_only = read_only
        self.budget = budget
        self.actor = actor or f"console:{_os_user()}"
        describe = getattr(engine.driver, "describe", None)
        self.database = redact_dsn(database or (describe() if callable(describe) else engine.driver.kind))
        self.driver = driver or engine.driver.kind
        self._intro = Introspector(engine, budget=budget)
        self._ops = Operator(engine, actor=self.actor, read_only=read_only)

    def set_read_only(self) -> None:
        """One way only: a console opened read-only can never become writable."""
        from engine.introspect import Operator

        self.read_only = True
        self._ops = Operator(self.engine, actor=self.actor, read_only=True)

    # --- time ----------------------------------------------------------------------------------

    def now(self) -> datetime:
        return self.engine.clock.now()

    # --- reads -----------------------------------------------------------------------------------

    async def _read(self, call: Callable[[], Awaitable[T]]) -> T:
        # The Introspector bounds the query itself; this bounds the whole round trip, so a hung
        # connection turns into a banner instead of a stuck screen.
        return await asyncio.wait_for(call(), timeout=max(1.0, self.budget * 6))

    async def queues(self) -> QueuesView:
        return await self._read(lambda: self._intro.queues())

    async def jobs(self, where: JobFilter, *, cursor: str | None = None, limit: int = PAGE_SIZE) -> JobPage:
        return await self._read(lambda: self._intro.jobs(where, cursor=cursor, limit=limit))

    async def job(self, job_id: str) -> JobDetail:
        return await self._read(lambda: self._intro.job(job_id))

    async def dead_letters(self, where: JobFilter) -> DeadLetters:
        return await self._read(lambda: self._intro.dead_letters(where))

    async def workers(self) -> WorkersView:
        return await self._read(lambda: self._intro.workers())

    async def why_job(self, job_id: str) -> WhyReport:
        return await self._read(lambda: self._intro.why_job(job_id))

    async def why_queue(self, queue: str) -> WhyReport:
        return await self._read(lambda: self._intro.why_queue(queue))

    # --- actions ---------------------------------------------------------------------------------

    def _writable(self, what: str) -> None:
        if self.read_only:
            raise JobsError(
                X_READ_ONLY, cause=f"{what} was refused: the console is read-only", fix='jobs-console --dsn "$JOBS_DSN"'
            )

    async def retry(self, job_id: str, *, note: str | None = None) -> ActionResult:
        self._writable("retry")
        return await self._ops.retry(job_id, note=note)

    async def retry_from_step(self, job_id: str, step: str, *, note: str | None = None) -> ActionResult:
        self._writable("retry from a step")
        return await self._ops.retry_from_step(job_id, step, note=note)

    async def cancel(self, job_id: str, *, note: str | None = None) -> ActionResult:
        self._writable("cancel")
        return await self._ops.cancel(job_id, note=note)

    async def plan(self, action: BulkAction, where: JobFilter) -> BulkPlan:
        """The dry run of a bulk action: reads only, so it is allowed read-only too."""
        return await self._read(lambda: self._ops.plan(action, where))

    async def bulk(
        self, action: BulkAction, where: JobFilter, *, per_second: float | None = None, note: str | None = None
    ) -> BulkResult:
        self._writable(f"bulk {action}")
        return await self._ops.bulk(action, where, per_second=per_second, note=note)

    async def pause(self, queue: str, *, note: str | None = None) -> QueuePause:
        self._writable("pause")
        return await self._ops.pause(queue, note=note)

    async def resume(self, queue: str) -> QueuePause:
        self._writable("resume")
        return await self._ops.resume(queue)

    async def send_event(self, name: str, payload: Any, *, tenant: str | None = None) -> EventSent:
        self._writable("send event")
        return await self._ops.send_event(name, payload, tenant=tenant)

    # --- failures ----------------------------------------------------------------------------------

    @staticmethod
    def describe_failure(exc: BaseException) -> tuple[str, str]:
        """A banner's title and detail for a failed read; never the DSN's password."""
        if isinstance(exc, TimeoutError):
            return "query ran past its time budget", "the database is slow or unreachable"
        if isinstance(exc, JobsError):
            title = "database unreachable" if exc.code == "X_DB_UNREACHABLE" else exc.code
            return title, redact_dsn(clean(exc.cause, limit=160))
        if isinstance(exc, (ConnectionError, OSError)) or "Operational" in type(exc).__name__:
            return "database unreachable", redact_dsn(clean(str(exc) or type(exc).__name__, limit=160))
        return f"refresh failed ({type(exc).__name__})", redact_dsn(clean(str(exc), limit=160))


EngineSource = Source  # the name the demo first used


def open_source(dsn: str, *, read_only: bool = False, budget: float = DEFAULT_BUDGET) -> Source:
    """Connect, check that the schema is installed (raising JobsError before any screen is
    drawn), and answer a Source on that engine."""
    engine = connect(dsn)

    async def check() -> None:
        try:
            await engine.driver.open()
        finally:
            await engine.driver.close()  # the console's own loop opens its pool again

    asyncio.run(check())
    return Source(engine, read_only=read_only, budget=budget, database=database_label(dsn))
