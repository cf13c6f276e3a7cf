"""`jobs-console demo`: a real engine and a real worker, in this process, on a throwaway PostgreSQL.

Start: a throwaway server (engine.testing) is initialised in a fresh directory, the schema
installed, the demo application's own table created in it (accounts.sql: the accounts its two
backfills sweep), and the demo's world (world.py: the same hour the snapshots and screenshots show)
played onto it, ending at the real now, in production. The world's running backfill pass is handed
back (as a draining worker hands back its jobs). Then the world's two workers (the demo
application's real handlers and backfills, each running an outbox relay; the second resumes that
pass at its batch) and a traffic generator start on their own thread and event loop, so handlers
never compete with the console's input. At each beat the traffic also checks out an order of the
demo shop: its receipt is staged through the transactional outbox in the shop's own transaction
(a psycopg connection of its own), one in four rolled back. The DSN is printed to stderr before
the console opens, so the
`jobs` CLI can be pointed at the same database. Only when no server can start does the demo fall
back to the memory driver, and the header says so.

Stop: the traffic ends, the worker drains (in-flight jobs get a short grace, then their leases are
released), the engine closes its pools, and the server is stopped and its directory deleted. If
this process dies without stopping (SIGKILL), the cluster's watchdog stops the server anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from console.demo.accounts import PostgresAccounts, declare
from console.demo.jobs import APPROVAL_EVENT, DEMO_JOBS, DEMO_TASKS, PACE
from console.demo.outbox import LIVE_FIRST_ORDER, checkout, checkouts
from console.demo.traffic import Traffic
from console.demo.world import WORKERS, memory_backfills, play_world
from console.demo.world_backfills import ENVIRONMENT, hand_over
from console.events import RecentEvents
from engine import Engine, FakeClock, JobsError, connect
from engine.testing import Factory

log = logging.getLogger("jobs.console.demo")

DRAIN_GRACE = 2.0  # seconds in-flight demo jobs get on quit before their leases are released
TICK = 2.0  # seconds between beats of traffic
CONCURRENCY = 8  # of the busier worker; the other gets half
LIVE_QUEUES = frozenset(q for _, _, _, queues, _ in WORKERS[:2] for q in queues)  # the two live workers'


@dataclass
class Demo:
    seed: int = 7
    force_memory: bool = False
    tick: float = TICK
    concurrency: int = CONCURRENCY
    traffic: bool = True  # False: the first burst only (tests)
    pace: float = 1.0  # how long the pretend work takes (0: none)
    read_only: bool = False
    world: bool = True  # False: no seeded hour, the first burst only (tests)
    on_execution: Callable[[Any], Any] | None = None  # the worker's report of each run (tests)
    queue: str | None = None  # --queue: once the world is played, start() refuses a name it never uses

    engine: Engine | None = field(default=None, init=False)
    source: Any = field(default=None, init=False)
    backfills: Any = field(default=None, init=False)  # the demo app's two (accounts.py), over its table
    backend: str = field(default="", init=False)  # "postgres" | "memory"
    dsn: str | None = field(default=None, init=False)  # the embedded server's, for the `jobs` CLI
    fallback: str | None = field(default=None, init=False)  # why the memory driver is used
    timings: dict[str, float] = field(default_factory=dict, init=False)
    _cluster: Any = field(default=None, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, init=False)
    _stop: asyncio.Event | None = field(default=None, init=False)
    _ready: threading.Event = field(default_factory=threading.Event, init=False)
    _failure: BaseException | None = field(default=None, init=False)
    _stopped: bool = field(default=False, init=False)
    recent: RecentEvents = field(default_factory=RecentEvents, init=False)  # the Logs screen's live events
    _log_state: tuple[bool, int, logging.Handler] | None = field(default=None, init=False)
    _orders: Any = field(default=None, init=False)  # the shop's next checkouts (outbox.py)

    # --- the header's words -------------------------------------------------------------------

    @property
    def database(self) -> str:
        if self.backend == "postgres":
            where = self._cluster.directory if self._cluster is not None else "?"
            return f"demo (throwaway) host={where}"
        return "demo in memory (nothing is stored)"

    @property
    def driver_label(self) -> str:
        if self.backend == "memory" and self.fallback:
            return "memory (no PostgreSQL server could start)"
        return self.backend

    @property
    def title(self) -> str:
        return f"jobs-console demo · {self.driver_label}"

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> Demo:
        started = time.perf_counter()
        PACE.scale = self.pace
        self._quiet_engine_logs()
        try:
            self.engine = self._open_engine()
            self.backfills = self._accounts()
            self.timings["engine"] = time.perf_counter() - started
            if self.world:
                self._play_world()  # --queue is checked over the world's pool, once it is played
                self.timings["world"] = time.perf_counter() - started - self.timings["engine"]
            else:
                self._check_queue_unplayed()
            if self.backend == "postgres":
                self._start_background()
            self.source = self._make_source()
        except BaseException:
            self.stop()
            raise
        self.timings["start"] = time.perf_counter() - started
        return self

    def _quiet_engine_logs(self) -> None:
        """The worker logs every failed attempt (the demo fails on purpose); written to stderr
        they would tear through the console's screen, so the demo keeps the latest in memory, where
        the Logs screen reads them (this process runs the engine, so it can show its events)."""
        engine_log = logging.getLogger("jobs")
        for old in [h for h in engine_log.handlers if isinstance(h, RecentEvents)]:
            engine_log.removeHandler(old)
        self._log_state = (engine_log.propagate, engine_log.level, self.recent)
        engine_log.addHandler(self.recent)
        engine_log.propagate = False
        if not engine_log.isEnabledFor(logging.INFO):  # sheds, suspensions, a worker's start and drain
            engine_log.setLevel(logging.INFO)

    def _open_engine(self) -> Engine:
        if not self.force_memory:
            from engine.testing import EmbeddedPostgres, install

            cluster = EmbeddedPostgres(max_connections=60)
            try:
                dsn = cluster.start()
                install(dsn)
            except (JobsError, OSError) as err:
                cluster.close()
                self.fallback = getattr(err, "cause", str(err))
                log.warning("demo: no PostgreSQL server could start (%s); using the memory driver", self.fallback)
            else:
                self._cluster = cluster
                self.timings.update({f"pg_{k}": v for k, v in cluster.timings.items()})
                self.backend, self.dsn = "postgres", dsn
                return connect(dsn, environment=ENVIRONMENT)
        self.backend = "memory"
        return connect("memory://", environment=ENVIRONMENT)

    def _accounts(self) -> Any:
        """The demo app's accounts and its backfills: on PostgreSQL a real table in the demo's
        database (accounts.sql), on memory an in-process one."""
        if self.dsn is None:
            return memory_backfills()
        store = PostgresAccounts(self.dsn)
        store.create()
        return declare(store)

    def _play_world(self) -> None:
        """The world's hour, ending now, played through a second engine on a FakeClock: on Postgres
        over its own pool (closed after), on memory over the live engine's own collections. The
        world's running backfill pass is then handed back, for the live worker to resume."""
        assert self.engine is not None
        clock = FakeClock(self.engine.clock.now())
        if self.dsn:
            seeder = connect(self.dsn, clock=clock, environment=ENVIRONMENT)
        else:
            seeder = Engine(self.engine.driver, clock=clock, environment=ENVIRONMENT)

        async def play() -> None:
            await play_world(seeder, ending=clock.now(), seed=self.seed, backfills=self.backfills)
            await hand_over(seeder, self.backfills)
            try:
                await self._check_queue(seeder)  # the world's queues, over the pool it is played through
            finally:
                if self.dsn:
                    await seeder.aclose()

        asyncio.run(play())

    async def _check_queue(self, engine: Engine) -> None:
        """X_UNKNOWN_QUEUE for a --queue that nothing in the demo's database names, nor its live
        workers' queues (which they register as the console opens), by the check a real database
        meets (console.source.check_queue)."""
        from console.source import check_queue

        await check_queue(engine, self.queue, declared=LIVE_QUEUES)

    def _check_queue_unplayed(self) -> None:
        """``_check_queue`` without the world: over a pool of its own on Postgres (the live engine's
        pool belongs to the worker's loop), over the live collections on memory."""
        assert self.engine is not None
        if self.queue is None:
            return
        engine = connect(self.dsn, environment=ENVIRONMENT) if self.dsn else self.engine

        async def check() -> None:
            try:
                await self._check_queue(engine)
            finally:
                if self.dsn:
                    await engine.aclose()

        asyncio.run(check())

    def announce(self) -> str:
        """The line printed before the console opens: where the demo's database is."""
        if self.dsn is None:
            return "jobs-console demo: in memory (nothing is stored; the `jobs` CLI cannot reach it)"
        return f"jobs-console demo: PostgreSQL at {self.dsn!r}\n  try: JOBS_DSN={self.dsn!r} jobsctl queues"

    def _make_source(self) -> Any:
        from console.source import Source

        assert self.engine is not None  # opened by start()
        return Source(
            self.engine,
            database=self.database,
            driver=self.driver_label,
            read_only=self.read_only,
            events=self.recent.snapshot,
            backfills=self.backfills,
            app="console.demo.accounts",
        )

    def run(self, make_app: Callable[[Any], Any]) -> None:
        """Run the console built by ``make_app(source)`` until the user quits.

        On Postgres the worker already runs on its own thread and loop. The memory driver is
        plain Python collections that only one event loop may touch, so there the worker and the
        traffic share the console's loop."""
        app = make_app(self.source)
        if self.backend == "postgres":
            app.run()
            return

        async def together() -> None:
            background = asyncio.create_task(self._serve())
            try:
                await app.run_async()
            finally:
                self._halt()
                await background

        asyncio.run(together())

    def _start_background(self) -> None:
        self._thread = threading.Thread(target=self._thread_main, name="jobs-demo", daemon=True)
        self._thread.start()
        self._ready.wait(timeout=30)
        if self._failure is not None:
            raise self._failure

    def _thread_main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # reported by start() or logged at stop()
            self._failure = exc
            self._ready.set()

    async def _serve(self) -> None:
        assert self.engine is not None
        eng = self.engine
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        traffic = Traffic(seed=self.seed)
        await eng.aenqueue_many(traffic.first_burst(eng.clock.now()))
        async with contextlib.AsyncExitStack() as workers:
            for worker in self._workers(eng):
                await workers.enter_async_context(worker)
            self._ready.set()
            while not self._stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), timeout=self.tick)
                if self._stop.is_set() or not self.traffic:
                    continue
                try:
                    await self.beat(eng, traffic)
                except JobsError as err:  # a lost connection must not end the demo's traffic
                    log.warning("demo traffic: %s", err)
                try:
                    await self.checkout()
                except Exception as err:  # the app's own connection failed: the next beat tries again
                    log.warning("demo checkout: %s", err)
        if self.backend == "postgres":
            await eng.aclose()  # this loop's pool; the memory driver has nothing to close

    async def beat(self, eng: Engine, traffic: Traffic) -> None:
        """One beat of the traffic: its jobs, then the approval events now due."""
        await eng.aenqueue_many(traffic.tick())
        for ws, tenant in traffic.approvals_due():
            await self._send_approval(eng, ws, tenant)

    def _workers(self, eng: Engine) -> list[Any]:
        """The world's two live workers, under its ids and over its queues (the third, stale one
        of the world stays stale)."""
        return [
            eng.worker(
                list(DEMO_JOBS) + list(DEMO_TASKS) + list(self.backfills or ()),
                id=wid,
                queues=list(queues),
                concurrency=max(1, self.concurrency // (1 + i)),
                grace=DRAIN_GRACE,
                poll_interval=0.5,
                heartbeat_interval=2.0,
                on_execution=self.on_execution,
            )
            for i, (wid, _host, _pid, queues, _conc) in enumerate(WORKERS[:2])
        ]

    async def checkout(self) -> bool:
        """The shop's next checkout: its receipt staged in the app's own transaction, on a psycopg
        connection of its own (not the engine's pool), and committed or rolled back (one in four);
        the workers' relays publish what commits. Answers whether it committed."""
        assert self.engine is not None
        if self._orders is None:
            self._orders = checkouts(self.seed, first=LIVE_FIRST_ORDER)
        return bool(await checkout(Factory.of(self.engine), next(self._orders)))

    async def _send_approval(self, eng: Engine, workspace: str, tenant: str) -> None:
        await eng.asend_event(
            APPROVAL_EVENT, {"workspace": workspace, "by": "demo-approver"}, tenant=tenant, actor="demo"
        )

    def stop(self) -> None:
        """Idempotent: end the traffic, drain the worker, close the engine, delete the server."""
        if self._stopped:
            return
        self._stopped = True
        self._halt()
        if self._thread is not None:
            self._thread.join(timeout=DRAIN_GRACE + 10)
            if self._thread.is_alive():
                log.warning("demo: the worker did not stop within %.0fs", DRAIN_GRACE + 10)
        if self.engine is not None:
            with contextlib.suppress(Exception):
                self.engine.close()
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
        if self._log_state is not None:  # the logger is the process's: hand it back as it was
            engine_log = logging.getLogger("jobs")
            engine_log.propagate, level, handler = self._log_state
            engine_log.setLevel(level)
            engine_log.removeHandler(handler)
            self._log_state = None

    def _halt(self) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop finished on its own
                self._loop.call_soon_threadsafe(self._stop.set)

    def __enter__(self) -> Demo:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
