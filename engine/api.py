"""`connect(dsn)` and the Engine facade an app holds: enqueue (sync and async), read a job, and the
operator actions, which are engine/actions' Operator (``eng.operator(actor=...)``): cancel,
retry_from_step and send_event here are that Operator's, with the same checks and refusals."""

from __future__ import annotations

import asyncio
import atexit
import itertools
import logging
from collections.abc import Coroutine, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Never, TypeVar

from engine.clock import Clock, SystemClock
from engine.drivers.base import Driver
from engine.errors import X_DSN_INVALID, X_INVALID_ARGUMENT, JobsError, unknown_option
from engine.ids import IdFactory
from engine.jobs import JobDefinition
from engine.newjobs import CHUNK, Enqueue, new_jobs, refuse_unknown, sent
from engine.opening import ExitCloser, ensure_open, forget
from engine.options import check_engine_setup, check_switch
from engine.runtime import logs
from engine.syncbridge import LoopThread
from engine.tracing import Tracing, tracing_for
from engine.types import EnqueueResult, JobRow, NewJob

if TYPE_CHECKING:  # the operator actions and the reads are imported where they are used: a worker
    # process opens its driver here (open_driver) and never loads them
    from engine.actions import Operator
    from engine.outbox_types import Staged
    from engine.projections import ActionResult
    from engine.records import SentEvent

T = TypeVar("T")


def open_driver(dsn: str, **options: Any) -> Driver:
    """The driver a DSN names: the one place the CLI, the worker, the console and ``connect``
    build one (``memory://`` or a PostgreSQL DSN)."""
    if dsn.startswith("memory:"):
        from engine.drivers.memory import MemoryDriver

        if options:  # a pool size or a statement timeout it would not honour
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"the memory driver takes no options, got {', '.join(sorted(options))} "
                "(they are a postgresql:// DSN's: connect(dsn, ...) honours them)",
                fix="connect('memory://')",
            )
        return MemoryDriver()
    import inspect

    from engine.drivers.postgres import PostgresDriver

    known = [n for n in inspect.signature(PostgresDriver).parameters if n != "dsn"]
    if unknown := set(options) - set(known):  # a misspelt pool option would be a bare TypeError
        names = [*known, "clock", "ids", "environment", "outbox_mode", "tracing"]  # connect's own too
        fix = "connect(dsn, {option}=...)"
        raise unknown_option("connect() takes no option", unknown, names, fix, known[0], X_INVALID_ARGUMENT)
    return PostgresDriver(dsn, **options)


class Engine:
    def __init__(
        self,
        driver: Driver,
        *,
        clock: Clock | None = None,
        ids: IdFactory | None = None,
        environment: str | None = None,
        outbox_mode: str = "direct",
        tracing: bool | Tracing | None = None,
    ) -> None:
        from engine.outbox import check_mode

        check_engine_setup(clock, ids, environment)
        self.outbox_mode = check_mode(outbox_mode)  # engine/outbox.py: what a stage outside a transaction does
        # engine/tracing.py: each enqueue a span whose context its jobs carry; None: off.
        self.tracing = tracing_for(tracing)
        self.driver = driver
        self.environment = environment  # the deployment's (backfills read it); None: $JOBS_ENV
        self.clock = clock or SystemClock()
        self.ids = ids or IdFactory(self.clock)
        self._bridge = LoopThread()
        self._warned_sync = False  # jobs.engine.sync-in-loop said once
        # An engine never closed (a script that ends without eng.close()) is closed at interpreter
        # exit, its pools' tasks ended on their loop instead of destroyed pending ("Task was
        # destroyed but it is pending!"). Holds the driver and the bridge, not the engine.
        self._close_at_exit = ExitCloser(driver, self._bridge)
        atexit.register(self._close_at_exit)

    # --- building rows ---------------------------------------------------------------------

    def _new_jobs(
        self,
        specs: Sequence[Enqueue],
        now: datetime,
        trace: dict[str, str] | None = None,
        *,
        start: int = 0,
        of: int = 0,
    ) -> list[NewJob]:
        """Check and build a batch's rows: the first bad one raises, before anything is written."""
        return new_jobs(specs, self.ids, now, trace, start=start, of=of)

    async def _ensure_open(self) -> None:
        await ensure_open(self.driver)

    def operator(self, *, actor: str | None = None, tenant: str | None = None, read_only: bool = False) -> Operator:
        """The operator actions (engine/actions): retry, retry_from_step, cancel, discard, plan and
        bulk, pause, resume, send_event, drain_worker, each audited as ``actor`` (default
        $JOBS_ACTOR, else user@host) and held to ``tenant`` when given (I25)."""
        from engine.actions import Operator

        return Operator(self, actor=actor, tenant=tenant, read_only=read_only)

    # --- async API -------------------------------------------------------------------------

    async def aenqueue_many(self, specs: Iterable[Enqueue]) -> list[EnqueueResult]:
        """Enqueue a batch, all or nothing: a row that fails its checks raises and nothing is
        written. Past CHUNK rows the batch goes out a statement per CHUNK rows in one transaction,
        each chunk checked while the server inserts the one before."""
        now = self.clock.now()
        if not isinstance(specs, Sequence):  # a generator of Enqueue is taken too
            if not isinstance(specs, Iterable):
                raise JobsError(
                    X_INVALID_ARGUMENT,
                    cause=f"enqueue_many takes a list (or any iterable) of Enqueue, not {specs!r:.60}",
                    fix="eng.enqueue_many([Enqueue(send_email, {'to': 'a@b.c'}), ...])",
                )
            specs = list(specs)
        first = self._new_jobs(specs[:CHUNK], now, of=len(specs))  # bad input answers before the database
        await self._ensure_open()
        return await sent(self.tracing, first, len(specs), lambda rows, trace: self._write(rows, specs, now, trace))

    def _write(
        self, first: list[NewJob], specs: Sequence[Enqueue], now: datetime, trace: dict[str, str] | None
    ) -> Coroutine[Any, Any, list[EnqueueResult]]:
        """The driver's insert of the batch (a coroutine the caller awaits: no frame of its own)."""
        if len(specs) <= CHUNK:
            return self.driver.job_enqueue(jobs=first, now=now)
        rest = (
            self._new_jobs(specs[at : at + CHUNK], now, trace, start=at, of=len(specs))
            for at in range(CHUNK, len(specs), CHUNK)
        )
        return self.driver.job_enqueue_chunks(chunks=itertools.chain([first], rest), now=now)

    async def aenqueue(
        self,
        job: JobDefinition,
        input: Any,
        *,
        tenant: str | None = None,
        delay: float | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
        **unknown: Never,
    ) -> EnqueueResult:
        refuse_unknown("aenqueue", unknown)
        return (await self.aenqueue_many([Enqueue(job, input, tenant, delay, run_at, priority)]))[0]

    async def aget(self, job_id: str, *, tenant: str | None = None) -> JobRow:
        """The job ``job_id`` names (its id, or a unique short id); X_NOT_FOUND when none does."""
        from engine.introspect.base import EngineView, load_job

        return await load_job(EngineView(self), job_id, tenant)

    async def aoutcome(self, job_id: str, *, timeout: float | None = None, tenant: str | None = None) -> JobRow:
        """The job's row once it has settled (completed, dead or cancelled: ``.state``, ``.result``,
        ``.last_error``); X_WAIT_TIMEOUT past ``timeout`` seconds, the job left as it is."""
        from engine.introspect.base import EngineView
        from engine.outcomes import await_outcome

        return await await_outcome(EngineView(self), job_id, tenant=tenant, timeout=timeout)

    async def acancel(
        self,
        job_id: str,
        *,
        tenant: str | None = None,
        actor: str | None = None,
        note: str | None = None,
        children: bool = False,
    ) -> ActionResult:
        """Cancel a live job; a finished one is a clear no-op (``changed`` False). ``children``:
        every live job below it too (the jobs its steps enqueued or waited for, and theirs)."""
        return await self.operator(actor=actor).cancel(job_id, tenant=tenant, note=note, children=children)

    async def asend_event(
        self, name: str, payload: dict[str, Any] | None = None, *, tenant: str | None = None, actor: str | None = None
    ) -> SentEvent:
        """Send a durable event: every wait of ``name`` and this tenant whose match the payload
        contains takes it, including waits reached later (``.woken``: waits made claimable now)."""
        return await self.operator(actor=actor).send_event(name, payload, tenant=tenant)

    async def aretry_from_step(
        self,
        job_id: str,
        step_name: str,
        *,
        tenant: str | None = None,
        actor: str | None = None,
        note: str | None = None,
    ) -> ActionResult:
        """Re-run a dead or completed job from ``step_name``: that step and the later ones run
        again (``.discarded``), earlier ones answer their stored results. A refusal is a clear
        error (X_INVALID_STATE, X_UNKNOWN_STEP, X_KEY_HELD, X_NOT_FOUND); nothing changes."""
        return await self.operator(actor=actor).retry_from_step(job_id, step_name, tenant=tenant, note=note)

    # --- sync API (a private loop on a thread) ---------------------------------------------

    def _sync(self, coro: Coroutine[Any, Any, T]) -> T:
        """``coro`` run on the engine's private loop. Called where an event loop runs (async code,
        a notebook), it blocks that loop for the round trip: said once per engine, as the warning
        `jobs.engine.sync-in-loop`."""
        if not self._warned_sync:
            running = asyncio._get_running_loop()
            if running is not None and not self._bridge.owns(running):
                self._warned_sync = True
                logs.emit(
                    logs.ENGINE_SYNC_IN_LOOP,
                    logging.WARNING,
                    call=getattr(coro, "__qualname__", "").rpartition(".")[2].removeprefix("a"),
                    fix="await the a-prefixed twin in async code: await eng.aenqueue(...)",
                )
        return self._bridge.run(coro)

    def enqueue_many(self, specs: Iterable[Enqueue]) -> list[EnqueueResult]:
        return self._sync(self.aenqueue_many(specs))

    def enqueue(
        self,
        job: JobDefinition,
        input: Any,
        *,
        tenant: str | None = None,
        delay: float | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
        **unknown: Never,
    ) -> EnqueueResult:
        refuse_unknown("enqueue", unknown)
        return self._sync(self.aenqueue(job, input, tenant=tenant, delay=delay, run_at=run_at, priority=priority))

    def get(self, job_id: str, *, tenant: str | None = None) -> JobRow:
        return self._sync(self.aget(job_id, tenant=tenant))

    def outcome(self, job_id: str, *, timeout: float | None = None, tenant: str | None = None) -> JobRow:
        return self._sync(self.aoutcome(job_id, timeout=timeout, tenant=tenant))

    def cancel(
        self,
        job_id: str,
        *,
        tenant: str | None = None,
        actor: str | None = None,
        note: str | None = None,
        children: bool = False,
    ) -> ActionResult:
        return self._sync(self.acancel(job_id, tenant=tenant, actor=actor, note=note, children=children))

    def send_event(
        self, name: str, payload: dict[str, Any] | None = None, *, tenant: str | None = None, actor: str | None = None
    ) -> SentEvent:
        return self._sync(self.asend_event(name, payload, tenant=tenant, actor=actor))

    def retry_from_step(
        self,
        job_id: str,
        step_name: str,
        *,
        tenant: str | None = None,
        actor: str | None = None,
        note: str | None = None,
    ) -> ActionResult:
        return self._sync(self.aretry_from_step(job_id, step_name, tenant=tenant, actor=actor, note=note))

    # --- the transactional outbox (engine/outbox.py) -----------------------------------------

    def stage(
        self,
        tx: object,
        job: JobDefinition,
        input: Any,
        *,
        tenant: str | None = None,
        delay: float | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
        **unknown: Never,
    ) -> Staged:
        """Stage an enqueue on the caller's own connection ``tx`` (a psycopg Connection or cursor,
        or ``eng.driver.transaction()`` on the memory driver), inside its transaction (I16)."""
        refuse_unknown("stage", unknown)
        return self.stage_many(tx, [Enqueue(job, input, tenant, delay, run_at, priority)])[0]

    def stage_many(self, tx: object, specs: Iterable[Enqueue]) -> list[Staged]:
        from engine.outbox import stage_many

        return stage_many(self, tx, specs)

    async def astage(
        self,
        tx: object,
        job: JobDefinition,
        input: Any,
        *,
        tenant: str | None = None,
        delay: float | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
        **unknown: Never,
    ) -> Staged:
        """``stage`` on a psycopg AsyncConnection (or async cursor)."""
        refuse_unknown("astage", unknown)
        return (await self.astage_many(tx, [Enqueue(job, input, tenant, delay, run_at, priority)]))[0]

    async def astage_many(self, tx: object, specs: Iterable[Enqueue]) -> list[Staged]:
        from engine.outbox import astage_many

        return await astage_many(self, tx, specs)

    # --- the embedded worker ------------------------------------------------------------------

    def worker(
        self,
        jobs: Any,
        *,
        queues: Sequence[str] | None = None,
        concurrency: int = 10,
        maintenance: bool = True,
        relay: bool = True,
        **options: Any,
    ) -> Any:
        """``async with eng.worker([send_email], queues=["mail"], concurrency=16): ...`` runs a
        worker inside the app's loop; leaving the block drains it (I14). ``jobs``: a Registry, a
        module, a job handle or a list of them. ``options``: WorkerConfig fields (batch_size,
        ack_batch, flush_interval, lease_seconds, grace, ...), maintenance_config, metrics,
        on_execution, relay_config. ``relay=False``: this worker runs no outbox relay; scheduler=False
        never leads the cron scheduler for the @task handles it serves, scheduler_config a SchedulerConfig."""
        from engine.runtime.worker_config import check_hooks
        from engine.services.maintenance import maintained_worker

        check_switch("maintenance", maintenance)
        check_switch("relay", relay)
        if "scheduler" in options:
            check_switch("scheduler", options["scheduler"])
        check_hooks(options.get("on_execution"), options.get("metrics"))
        options.setdefault("tracing", self.tracing)  # its runs join their enqueuers' traces
        return maintained_worker(
            self.driver,
            jobs,
            engine=lambda: self,  # ctx.engine: what its handlers enqueue through
            clock=self.clock,
            queues=queues,
            concurrency=concurrency,
            maintenance=maintenance,
            relay=relay,
            **options,
        )

    async def aclose(self) -> None:
        """Close the driver's pools (``async with connect(...) as eng:`` calls it on leaving)."""
        atexit.unregister(self._close_at_exit)
        forget(self.driver)
        await self.driver.close()  # every loop's pools, each on its own loop (the sync calls' included)
        self._bridge.stop()

    def close(self) -> None:
        """Close the driver's pools (``with connect(...) as eng:`` calls it on leaving)."""
        atexit.unregister(self._close_at_exit)
        self._close_at_exit()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Engine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def connect(
    dsn: str,
    *,
    clock: Clock | None = None,
    ids: IdFactory | None = None,
    environment: str | None = None,
    outbox_mode: str = "direct",
    tracing: bool | Tracing | None = None,
    **driver_options: Any,
) -> Engine:
    """``connect("postgresql://app@db/app")``, or ``connect("memory://")`` for tests and demos.
    ``outbox_mode="required"``: a stage outside a transaction is X_OUTBOX_NO_TX, not a direct publish.
    ``tracing=True``: OpenTelemetry spans for enqueues and runs, a run in its enqueuer's trace
    (engine/tracing.py; needs opentelemetry-api)."""
    if not isinstance(dsn, str) or not dsn.strip():
        raise JobsError(
            X_DSN_INVALID,
            cause=f"dsn={dsn!r} is empty",
            fix="connect('postgresql://USER@HOST/DB') or connect('memory://')",
        )
    from engine.outbox import check_mode

    check_mode(outbox_mode)  # before a driver is built
    check_engine_setup(clock, ids, environment)
    traced = tracing_for(tracing)
    return Engine(
        open_driver(dsn, **driver_options),
        clock=clock,
        ids=ids,
        environment=environment,
        outbox_mode=outbox_mode,
        tracing=traced,
    )
