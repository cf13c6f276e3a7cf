"""The console's only door to the engine: projections in, actions out.

It wraps ``engine.introspect``'s Introspector (reads, each under a small time budget) and
``engine.actions``' Operator (the audited, tenant-aware actions the CLI and the Python API call
too) and never knows which driver is behind them: the console imports neither psycopg nor the
postgres driver (import-linter holds it to that). A job is named by its id or a unique short id
(``resolve_job``: the tail the console shows, or the head).

Constructing one (stable)::

    Source(engine, read_only=False, database=None, driver=None, budget=0.5, actor=None, events=None,
           backfills=None, app=None)
    open_source(dsn, read_only=False, app=None, environment=None)   # connect, check the schema

``database`` and ``driver`` are the labels the header shows (default: the driver's own
description, password removed, and its kind). ``budget``: seconds each console query may take
(a statement timeout on Postgres). ``actor``: who the audit trail names (default
``console:<os user>``). ``events``: the engine's log events when it runs in this process (the
demo passes its in-memory handler's; console/events.py). In read-only mode every action raises
X_READ_ONLY here, and the Operator is built read-only so the engine refuses it as well.

``backfills``: the application's declared backfills (a module, a ``Backfills``, a catalog), which
live in the application's code, not in the database: ``open_source(..., app="myapp.backfills")``
imports that module exactly as ``jobsctl backfill --app`` does (``jobs-console --app``, default
$JOBS_APP). None: the Backfills screen says how to declare them. The console's environment is its
engine's (``jobs-console --env``, else $JOBS_ENV, else development). ``backfill_door``
(console/source_backfills.py) holds them and their controls; the reads and actions are here.

``audit()`` reads the audit log (every operator's actions, newest first) for the Activity screen.
"""

from __future__ import annotations

import asyncio
import getpass
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from datetime import datetime
from typing import Any, TypeVar

from console.backfills_board import BackfillsBoard
from console.events import LogEvent
from console.failures import NoAnswer, describe_failure
from console.format import database_label, redact_dsn
from console.source_backfills import SourceBackfills
from engine.actions import Operator
from engine.api import Engine, connect
from engine.errors import SHUTTING_DOWN, UNREACHABLE, X_READ_ONLY, JobsError
from engine.introspect.base import resolve_id
from engine.introspect.reads import unknown_queue
from engine.opening import ensure_open
from engine.outbox_types import OutboxView, StagedWhy
from engine.projections import (
    ActionResult,
    BulkAction,
    BulkPlan,
    BulkResult,
    DeadLetters,
    DrainRequest,
    JobDetail,
    JobFilter,
    JobPage,
    JobSummary,
    QueuePause,
    QueuesView,
    WhyReport,
    WorkersView,
)
from engine.records import AuditEntry, SentEvent
from engine.series import QueueSeries

T = TypeVar("T")
DEFAULT_BUDGET = 0.5  # seconds: watching a database must never load it
PAGE_SIZE = 50
OUTBOX_ROWS = 20  # the Outbox screen's backlog head, and at most as many failing rows and claims
AUDIT_ROWS = 50  # the audit log's latest entries the Activity screen reads
# A refused note's fix as the console's operator applies it: the note is typed in a confirmation
# (the engine's own fix names the Python keyword, `note='...'`).
NOTE_FIX = "press the action's key again and type the note as plain text in the confirmation's note field"


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
        events: Callable[[], list[LogEvent]] | None = None,
        backfills: Any = None,
        app: str | None = None,
    ) -> None:
        from engine.backfills import Catalog, resolve_environment
        from engine.introspect import Introspector

        self.engine = engine
        self.read_only = read_only
        self.read_only_why: str | None = None
        self.budget = budget
        self.actor = actor or f"console:{_os_user()}"
        self.database = redact_dsn(database or engine.driver.describe())
        self.driver = driver or engine.driver.kind
        self._intro = Introspector(engine, budget=budget)
        self.deadline = max(1.0, budget * 6)  # set_refresh narrows it to the refresh interval
        self._ops = Operator(engine, actor=self.actor, read_only=read_only, note_fix=NOTE_FIX)
        # The audit log's reader: a read under the console's statement budget, not an action's.
        self._auditor = Operator(engine, actor=self.actor, read_only=True, budget=budget)
        self._schedules = _schedules(engine, self.actor, read_only)
        self._events = events
        catalog = None if backfills is None else Catalog.of(backfills)
        self.backfill_door = SourceBackfills(catalog, resolve_environment(engine.environment), self._control)
        self.environment = self.backfill_door.environment
        self.app = app

    def set_read_only(self, why: str | None = None) -> None:
        """One way only: a console opened read-only can never become writable. ``why``: the
        database's reason (a reader's role, a standby), said once the console opens."""
        self.read_only = True
        self.read_only_why = why
        self._ops = Operator(self.engine, actor=self.actor, read_only=True, note_fix=NOTE_FIX)
        self._schedules = _schedules(self.engine, self.actor, True)
        self.backfill_door.forget()

    # --- time ----------------------------------------------------------------------------------

    def now(self) -> datetime:
        return self.engine.clock.now()

    # --- reads -----------------------------------------------------------------------------------

    def set_refresh(self, interval: float) -> None:
        """A read gives up after one refresh interval (at least a second, at most six budgets), so
        a refresh that meets a frozen server raises the banner before the next one is due."""
        self.deadline = max(1.0, min(self.budget * 6, interval))

    async def _read(self, call: Callable[[], Awaitable[T]]) -> T:
        # The Introspector bounds each statement on the server; this bounds the whole round trip
        # on the client, without waiting for the abandoned call to unwind (a query cancelled on a
        # frozen server takes psycopg another ten seconds). A read that found the server gone or
        # silent drops the engine's connections, so the next one connects afresh: it answers at
        # once when the server is back, where a pool's own reconnection backs off.
        task = asyncio.ensure_future(call())
        try:
            done, _ = await asyncio.wait({task}, timeout=self.deadline)
        except asyncio.CancelledError:
            task.cancel()
            task.add_done_callback(_retrieve)
            raise
        if not done:
            task.cancel()
            task.add_done_callback(_retrieve)
            await self.engine.driver.reset()
            raise NoAnswer(self.deadline)
        try:
            return task.result()
        except JobsError as err:
            if err.meta.get("condition") in (UNREACHABLE, SHUTTING_DOWN):
                await self.engine.driver.reset()
            raise

    async def queues(self) -> QueuesView:
        return await self._read(lambda: self._intro.queues())

    async def queue_series(self, queue: str) -> QueueSeries:
        """One queue's last hour, minute by minute: completed, dead, wait and run latency."""
        return await self._read(lambda: self._intro.queue_series(queue))

    async def jobs(self, where: JobFilter, *, cursor: str | None = None, limit: int = PAGE_SIZE) -> JobPage:
        return await self._read(lambda: self._intro.jobs(where, cursor=cursor, limit=limit))

    async def job(self, job_id: str) -> JobDetail:
        """One job by its id or a unique short id."""
        return await self._read(lambda: self._intro.job(job_id))

    async def resolve_job(self, fragment: str) -> str:
        """The full id a short id names (jump to a job): the one job whose id begins or ends
        with it; X_AMBIGUOUS_ID lists the candidates, X_NOT_FOUND when none does."""
        return await self._read(lambda: resolve_id(self._intro, fragment, None, budget_ms=self._intro.budget_ms))

    async def dead_letters(self, where: JobFilter) -> DeadLetters:
        return await self._read(lambda: self._intro.dead_letters(where))

    async def workers(self) -> WorkersView:
        return await self._read(lambda: self._intro.workers())

    async def schedules(self) -> Any:
        """engine.introspect.schedules.SchedulesView: the cron tasks and the scheduler's leader."""
        return await self._read(lambda: self._schedules.view())

    async def outbox(self) -> tuple[OutboxView, tuple[StagedWhy, ...]]:
        """The outbox (backlog, live claims, failing rows, relays alive, published in the last hour)
        and the rows worth a look, in stage order, each with why it is not published yet: the
        backlog's head (the oldest ``OUTBOX_ROWS``) and the failing rows."""
        from engine.introspect.outbox import outbox_rows, outbox_view

        async def read() -> tuple[OutboxView, tuple[StagedWhy, ...]]:
            view = await outbox_view(self._intro, limit=OUTBOX_ROWS)
            return view, await outbox_rows(self._intro, view, limit=OUTBOX_ROWS)

        return await self._read(read)

    async def backfills(self) -> BackfillsBoard:
        """Every declared backfill in each environment it names (and this console's): status,
        live progress, the gate a write pass meets now, and its ledger history."""
        return await self._read(lambda: self.backfill_door.board(self.app))

    async def backfill_gate(self, name: str, environment: str, *, write: bool, force: bool = False) -> Any:
        """The gate (engine.backfills.Gate) this start would meet now, or None: a read."""
        return await self._read(lambda: self.backfill_door.control(environment).gate(name, write=write, force=force))

    async def audit(self, *, limit: int = AUDIT_ROWS) -> list[AuditEntry]:
        """The audit log's latest ``limit`` entries, newest first: every operator's actions that
        changed something, whoever took them (console, jobsctl, Python), as Operator.audit reads
        them (an operator scoped to a tenant reads that tenant's only)."""
        return await self._read(lambda: self._auditor.audit(limit=limit))

    async def why_job(self, job_id: str) -> WhyReport:
        return await self._read(lambda: self._intro.why_job(job_id))

    async def why_queue(self, queue: str) -> WhyReport:
        return await self._read(lambda: self._intro.why_queue(queue))

    def live_events(
        self, *, job_id: str | None = None, queue: str | None = None, worker: str | None = None
    ) -> list[LogEvent] | None:
        """The engine's log events about a job, a queue or a worker, newest last, when the engine
        runs in this process (the demo); None when it does not (console/events.py says why)."""
        if self._events is None:
            return None
        return [e for e in self._events() if e.about(job_id=job_id, queue=queue, worker=worker)]

    # --- actions ---------------------------------------------------------------------------------

    def _writable(self, what: str) -> None:
        if self.read_only:
            raise JobsError(
                X_READ_ONLY, cause=f"{what} was refused: the console is read-only", fix='jobs-console --dsn "$JOBS_DSN"'
            )

    async def retry(self, job_id: str, *, note: str | None = None, children: bool = False) -> ActionResult:
        """Retry a dead job; ``children``: and every dead job below it, its wait on them run again
        (Operator.retry)."""
        self._writable("retry")
        return await self._ops.retry(job_id, note=note, children=children)

    async def retry_from_step(self, job_id: str, step: str, *, note: str | None = None) -> ActionResult:
        self._writable("retry from a step")
        return await self._ops.retry_from_step(job_id, step, note=note)

    async def cancel(self, job_id: str, *, note: str | None = None, children: bool = False) -> ActionResult:
        """Cancel a live job; ``children``: and every live job below it (Operator.cancel)."""
        self._writable("cancel")
        return await self._ops.cancel(job_id, note=note, children=children)

    async def children(self, job_id: str) -> list[JobSummary]:
        """The jobs below a job (those its steps enqueued or waited for, and theirs), as they stand now."""
        return await self._read(lambda: self._ops.children(job_id))

    async def discard(self, job_id: str, *, note: str | None = None) -> ActionResult:
        """Discard a dead letter: deleted; its history keeps who discarded it, when and the note."""
        self._writable("discard")
        return await self._ops.discard(job_id, note=note)

    async def plan(self, action: BulkAction, where: JobFilter) -> BulkPlan:
        """The dry run of a bulk action: reads only, so it is allowed read-only too."""
        return await self._read(lambda: self._ops.plan(action, where))

    async def bulk(
        self,
        action: BulkAction,
        where: JobFilter,
        *,
        per_second: float | None = None,
        note: str | None = None,
        progress: Callable[[BulkResult], None] | None = None,
        stop: asyncio.Event | None = None,
        plan: BulkPlan | None = None,
    ) -> BulkResult:
        """Operator.bulk: ``progress`` told the totals after each batch, ``stop`` ends it between
        two; ``plan``, the dry run confirmed, bounds it to what that counted."""
        self._writable(f"bulk {action}")
        return await self._ops.bulk(
            action, where, per_second=per_second, note=note, progress=progress, stop=stop, plan=plan
        )

    def retry_all_with_children(
        self,
        where: JobFilter,
        *,
        per_second: float | None = None,
        note: str | None = None,
        stop: asyncio.Event | None = None,
        plan: BulkPlan | None = None,
    ) -> AsyncIterator[ActionResult]:
        """Every dead job ``where`` matches, retried with the dead jobs below it, newest first: an
        answer a job as it lands; ``stop`` ends it before the next job; ``plan`` bounds it to what
        the dry run confirmed counted (Operator.retry_all_with_children)."""
        self._writable("bulk retry")
        return self._ops.retry_all_with_children(where, note=note, per_second=per_second, stop=stop, plan=plan)

    async def pause(self, queue: str, *, note: str | None = None, create: bool = False) -> QueuePause:
        """X_UNKNOWN_QUEUE ("did you mean") for a queue nothing names, unless ``create``."""
        self._writable("pause")
        return await self._ops.pause(queue, note=note, create=create)

    async def resume(self, queue: str, *, note: str | None = None) -> QueuePause:
        """The pause row goes, its note with it; the audit log keeps the resume and ``note``."""
        self._writable("resume")
        return await self._ops.resume(queue, note=note)

    async def pause_task(self, name: str, *, note: str | None = None) -> Any:
        self._writable("pause")
        return await self._schedules.pause(name, note=note)

    async def resume_task(self, name: str, *, note: str | None = None) -> Any:
        self._writable("resume")
        return await self._schedules.resume(name, note=note)

    async def trigger_task(self, name: str, *, note: str | None = None) -> str:
        self._writable("trigger")
        return await self._schedules.trigger(name, note=note)  # type: ignore[no-any-return]

    async def start_backfill(self, name: str, environment: str, *, write: bool = False, force: bool = False) -> Any:
        """Enqueue a pass (a dry run unless ``write``) after every gate: engine.backfills.Started."""
        self._writable("starting a backfill pass")
        return await self.backfill_door.control(environment).start(name, write=write, force=force)

    async def cancel_backfill(self, name: str, environment: str, *, note: str | None = None) -> ActionResult:
        self._writable("cancelling a backfill pass")
        return await self.backfill_door.control(environment).cancel(name, note=note)  # type: ignore[no-any-return]

    async def retry_backfill(self, name: str, environment: str, *, note: str | None = None) -> ActionResult:
        """Continue the latest failed, cancelled or stalled pass from the batch it stopped on."""
        self._writable("retrying a backfill pass")
        return await self.backfill_door.control(environment).retry(name, note=note)  # type: ignore[no-any-return]

    def _control(self, environment: str) -> Any:
        """An environment's BackfillControl as this source acts now (its actor, read-only or not)."""
        from engine.backfills import BackfillControl, Catalog

        catalog = self.backfill_door.catalog
        return BackfillControl(
            self.engine,
            catalog if catalog is not None else Catalog([]),  # X_BACKFILL_UNKNOWN
            actor=self.actor,
            read_only=self.read_only,
            environment=environment,
            note_fix=NOTE_FIX,
        )

    async def send_event(self, name: str, payload: Any, *, tenant: str | None = None) -> SentEvent:
        self._writable("send event")
        return await self._ops.send_event(name, payload, tenant=tenant)

    async def drain_worker(self, worker_id: str, *, note: str | None = None) -> DrainRequest:
        """Ask a worker to stop claiming and drain; it sees the request at its next heartbeat."""
        self._writable("drain a worker")
        return await self._ops.drain_worker(worker_id, note=note)

    # --- failures ----------------------------------------------------------------------------------

    describe_failure = staticmethod(describe_failure)


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # an abandoned read's late failure is not reported as unhandled


def _schedules(engine: Engine, actor: str, read_only: bool) -> Any:
    from engine.introspect.schedules import Schedules

    return Schedules(engine, actor=actor, read_only=read_only, note_fix=NOTE_FIX)


def naming_given_dsn(err: JobsError, dsn: str) -> JobsError:
    """``err`` with ``dsn``, given by --dsn, in its fix where the fix names "$JOBS_DSN"."""
    from engine.drivers.postgres.dsn import naming_dsn

    fix = naming_dsn(err.fix, dsn)
    return err if fix == err.fix else JobsError(err.code, cause=err.cause, fix=fix, docs=err.docs, meta=err.meta)


def open_source(
    dsn: str,
    *,
    read_only: bool = False,
    budget: float = DEFAULT_BUDGET,
    app: str | None = None,
    environment: str | None = None,
    prepared_statements: bool = True,
    queue: str | None = None,
) -> Source:
    """Connect, check the schema is installed and ``queue`` (--queue) one a job, worker or pause
    names, load the app's backfills from ``app`` (each a JobsError before any screen is drawn), and
    answer a Source. ``prepared_statements=False``: prepare none (PgBouncer in transaction mode)."""
    backfills = None
    if app:
        from engine.cli.backfill import load_catalog  # the `jobsctl backfill --app` door

        backfills = load_catalog(app)
    options: dict[str, Any] = {} if prepared_statements else {"prepared_statements": False}  # memory takes none
    engine = connect(dsn, environment=environment, **options)

    async def check() -> str | None:
        try:
            await ensure_open(engine.driver)
            await check_queue(engine, queue)
            return await engine.driver.role_may_act()
        finally:
            await engine.aclose()  # the console's own loop opens its pool again

    cannot_act = asyncio.run(check())
    source = Source(
        engine, read_only=read_only, budget=budget, database=database_label(dsn), backfills=backfills, app=app
    )
    if cannot_act is not None:  # offer no action the database would refuse
        source.set_read_only(cannot_act)
    return source


async def check_queue(engine: Engine, queue: str | None, *, declared: Collection[str] = ()) -> None:
    """X_UNKNOWN_QUEUE (the names it may have meant, `jobs-console --queue CLOSEST`) for a --queue no
    job, worker or pause in the database names, nor ``declared`` (queues an app declares that its
    traffic has not reached yet): one check for a real database and the demo, world or not."""
    if queue is None:
        return
    known = await engine.driver.queue_names_known()
    if queue not in known and queue not in declared:
        raise unknown_queue(queue, sorted({*known, *declared}), command="jobs-console --queue", also="")
