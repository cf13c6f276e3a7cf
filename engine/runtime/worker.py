"""The worker: a fixed number of claim slots, batched claims, wake-ups, heartbeats and drain.

- Each slot belongs to its own job and is free the moment that job settles (I12): the claim loop
  re-arms on free slots, never on a whole batch, so one slow job never holds the pool.
- When several slots are free one claim takes them all (up to ``batch_size``); completions are
  acked in batches by the `AckBuffer`; leases are renewed in one statement per tick.
- Idle, the loop sleeps until new work is NOTIFYed, the next delayed row falls due, or the poll
  interval passes (the fallback), whichever is first: no busy loop.
- A database that goes away never ends the worker: every loop retries with backoff (logged and
  counted), running jobs keep running and are settled when it is back, if their lease holds. A
  call that fails for another reason is said as what it is (engine/runtime/failures.py).
- Drain (I14): stop claiming, give in-flight work ``grace`` seconds, release what is left (nack
  "release", and NOTIFY so another worker takes it at once), flush the acks, then await every
  background loop before the caller closes the pools.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

from engine.clock import Clock, worker_clock
from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.jobs import Registry, as_registry
from engine.runtime import aio, collector, logs
from engine.runtime.burst import Burst
from engine.runtime.execute import Execution, Runner
from engine.runtime.failures import Failures
from engine.runtime.floors import ClaimFloors
from engine.runtime.gauges import GaugeReader
from engine.runtime.health import Health
from engine.runtime.leases import LeaseKeeper
from engine.runtime.limits import Limits
from engine.runtime.metrics import Metrics
from engine.runtime.presence import Presence
from engine.runtime.registration import Registration
from engine.runtime.settle import AckBuffer, Pending
from engine.runtime.startup import when_reachable
from engine.runtime.worker_config import WorkerConfig, check_hooks, served_queues
from engine.types import ClaimedJob, Heartbeat

if TYPE_CHECKING:
    from engine.tracing import Tracing

STOP_WAIT = 0.5  # seconds a drain past its close_timeout still gives its loops to end


__all__ = ["Worker", "WorkerConfig", "as_registry"]


class Worker:
    """``async with Worker(driver, registry, config=...)``: started on enter, drained on exit."""

    def __init__(
        self,
        driver: Driver,
        registry: Registry,
        *,
        config: WorkerConfig | None = None,
        clock: Clock | None = None,
        metrics: Metrics | None = None,
        on_execution: Callable[[Execution], Any] | None = None,
        tracing: Tracing | None = None,
        services: Sequence[Callable[[], Awaitable[None]]] = (),
        on_drain: Sequence[Callable[[], Awaitable[None]]] = (),
        engine: Callable[[], Any] | None = None,
    ) -> None:
        self.config = cfg = config or WorkerConfig()
        check_hooks(on_execution, metrics)
        if len(registry) == 0:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause="the worker was given a registry with no jobs",
                fix="decorate a handler with @job(name=..., idempotency_key=...) in the module",
            )
        self.driver, self.registry = driver, registry
        self.clock = worker_clock(clock)
        self.metrics = metrics or Metrics()
        self.on_execution = on_execution
        self.tracing = tracing  # each run an OpenTelemetry span (engine/tracing.py); None: off
        self.engine = engine  # makes what its runs' ctx.engine answers, on first use
        self.id = cfg.id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.queues = served_queues(cfg.queues, tuple(registry.queues()))
        self.health = Health(self.clock, heartbeat_interval=cfg.heartbeat_interval)  # what /livez, /readyz say
        self.keeper = LeaseKeeper(
            driver,
            self.clock,
            worker=self.id,
            lease_seconds=cfg.lease_seconds,
            interval=cfg.renew_interval or cfg.lease_seconds / 3,
            metrics=self.metrics,
            health=self.health,
        )
        self.presence = Presence(
            driver, self.clock, worker=self.id, interval=cfg.presence_interval, metrics=self.metrics, poke=self._poke
        )
        self._services, self._on_drain = list(services), list(on_drain)
        self._running: dict[str, asyncio.Task[None]] = {}  # each claimed job's task, until it settles
        self._floors = ClaimFloors()  # where the next claim starts reading each queue
        self._gauges = GaugeReader(driver, self.clock, self.metrics, worker=self.id, interval=cfg.gauges_interval)
        self.registration = Registration(
            driver,
            self.clock,
            worker=self.id,
            queues=self.queues,
            concurrency=cfg.concurrency,
            heartbeat_interval=cfg.heartbeat_interval,
            presence=self.presence,
            health=self.health,
            metrics=self.metrics,
        )
        self._tasks: list[asyncio.Task[Any]] = []
        self._stopping = self._closing = self._started = self._drained = False
        self._drain_task: asyncio.Task[None] | None = None  # an operator's drain request, or a burst's end
        self._burst: Burst | None = None  # burst=True: stops once nothing is left (engine/runtime/burst.py)
        self.released: list[str] = []
        self.maintenance: Any = None  # set by services.maintenance.maintained_worker
        self.relay: Any = None  # the outbox relay, set by the same
        self.scheduler: Any = None  # likewise, when the registry holds cron tasks

    def add_service(
        self, run: Callable[[], Awaitable[None]], *, on_drain: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        """A background loop started with the worker and awaited by its drain (I14)."""
        self._services.append(run)
        if on_drain is not None:
            self._on_drain.append(on_drain)

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def in_use(self) -> int:
        return len(self._running)

    async def start(self) -> None:
        """Open the driver and register, waiting for a database that does not answer yet
        (engine/runtime/startup.py), then start the claim loop and the background loops."""
        if self._started:
            return
        cfg = self.config
        await when_reachable(self.registration.register, worker=self.id, start_timeout=cfg.start_timeout)
        self._started = self.health.started = True
        if cfg.tune_gc:  # given back by drain(), which runs whenever _started is set
            collector.hold(cfg.concurrency)
        self.health.beat()  # the registration landed
        self._woken = asyncio.Event()
        self._slot_freed = asyncio.Event()
        self._stopped = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=cfg.concurrency, thread_name_prefix="jobs-handler")
        self.acks = AckBuffer(
            self.driver,
            self.clock,
            self.keeper,
            self.metrics,
            batch_size=cfg.ack_batch,
            interval=cfg.flush_interval,
            on_settled=self._ack_settled,
            parallel=cfg.ack_parallel,
        )
        self.limits = Limits(
            self.driver, self.clock, worker=self.id, lease_seconds=cfg.lease_seconds, shed_delay=cfg.shed_delay
        )
        self.runner = Runner(
            driver=self.driver,
            registry=self.registry,
            clock=self.clock,
            worker=self.id,
            keeper=self.keeper,
            acks=self.acks,
            limits=self.limits,
            metrics=self.metrics,
            executor=self._executor,
            poke=self._woken.set,
            traceback_limit=cfg.traceback_limit,
            tasks=self._running,
            tracing=self.tracing,
            engine=self.engine,
        )
        if cfg.burst:
            self._burst = Burst(self._running, self.acks, self._woken, self._floors, self.relay)
        spawn = asyncio.get_running_loop().create_task
        self._claimer = spawn(self._claim_loop(), name="jobs-claim")
        self._tasks = [
            spawn(self.keeper.run(), name="jobs-renew"),
            spawn(self.acks.run(), name="jobs-ack"),
            spawn(self._listen_loop(), name="jobs-listen"),
            spawn(
                self.registration.run(in_use=lambda: self.in_use, stopping=lambda: self._stopping, drain=self._asked),
                name="jobs-heartbeat",
            ),
            spawn(self._gauges.run(), name="jobs-gauges"),
            spawn(self.presence.run(), name="jobs-presence"),
            spawn(self.health.tick(), name="jobs-health"),
        ] + [spawn(_run(svc), name="jobs-service") for svc in self._services]
        logs.emit(logs.WORKER_STARTED, worker=self.id, queues=list(self.queues), concurrency=cfg.concurrency)

    async def __aenter__(self) -> Worker:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.drain()

    def stop_claiming(self) -> None:
        self._stopping = self.health.draining = True
        if self._started:
            self._woken.set()
            self._slot_freed.set()

    async def drain(self, grace: float | None = None) -> None:
        """Stop claiming, let in-flight work finish up to ``grace``, release the rest, flush, and
        await every background loop (I14). The close after the grace takes at most
        ``close_timeout`` real seconds whatever the database does: a step still waiting on it
        then is given up and logged (`jobs.worker.close-abandoned`). Safe to call twice: a second
        call waits for the first."""
        if not self._started:
            return
        if self._drained:  # a drain under way (a signal, an operator's request): wait for its end
            await self._stopped.wait()
            return
        self._drained = True
        cfg, loop = self.config, asyncio.get_running_loop()
        grace = cfg.grace if grace is None else grace
        logs.emit(logs.WORKER_DRAINING, worker=self.id, in_flight=len(self._running), grace=grace)
        self.stop_claiming()
        # The Workers screen shows it draining at once, not at the next heartbeat; stopped with the loops.
        beat = self.registration.beat(in_use=len(self._running), stopping=True)
        self._tasks.append(loop.create_task(beat, name="jobs-heartbeat-draining"))
        grace_over = asyncio.ensure_future(self.clock.sleep(grace))
        try:
            await aio.until(grace_over, [self._claimer])  # a claim in flight lands, and its jobs start
            # asyncio.wait, not gather: the end of the grace must not cancel the jobs.
            await aio.until(grace_over, list(self._running.values()))
        finally:
            grace_over.cancel()
        close_by = loop.time() + cfg.close_timeout
        await aio.stop([self._claimer], close_by)  # a claim still waiting on the database
        left = [jid for jid, t in self._running.items() if not t.done()]
        for jid in left:
            lease = self.keeper.leases.get(jid)
            if lease is not None:
                lease.abort("drain")  # a run still in its handler stops; one settling already ignores it
        steps: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
            (
                "release",
                lambda: asyncio.gather(*(self._running[j] for j in left if j in self._running), return_exceptions=True),
            ),
            ("ack", self.acks.close),
        ]
        if self.released:  # wake the others at once (else their poll finds the released rows)
            steps.append(("notify", lambda: self.driver.queue_notify(queues=self.queues)))
        steps += [("service", hook) for hook in self._on_drain]
        for what, step in steps:
            if not await aio.within(step, close_by):
                logs.emit(logs.WORKER_CLOSE_ABANDONED, logging.WARNING, worker=self.id, step=what)
        self._closing = True
        stuck = await aio.stop(self._tasks, max(close_by, loop.time() + STOP_WAIT))
        if stuck:
            logs.emit(
                logs.WORKER_CLOSE_ABANDONED,
                logging.WARNING,
                worker=self.id,
                step="loops",
                tasks=sorted(t.get_name() for t in stuck if isinstance(t, asyncio.Task)),
            )
        # Unregistered here, or by the reaper once its heartbeat is old; then its presence ends
        # (a row left behind, still holding claims, has them re-delivered by the fleet).
        await aio.within(lambda: self.driver.worker_deregister(id=self.id), max(close_by, loop.time() + STOP_WAIT))
        await aio.within(self.presence.release, max(close_by, loop.time() + STOP_WAIT))
        self._executor.shutdown(wait=False, cancel_futures=True)
        if cfg.tune_gc:
            collector.release(cfg.concurrency)
        self._stopped.set()
        self.health.stopped = True
        logs.emit(logs.WORKER_STOPPED, worker=self.id, released=len(self.released))

    def _poke(self) -> None:
        if self._started:
            self._woken.set()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    # --- the claim loop ------------------------------------------------------------------------

    async def _claim_loop(self) -> None:
        cfg = self.config
        failures = Failures("claim", self.id, self.metrics, self.health)  # engine/runtime/failures.py
        while not self._stopping:
            free = cfg.concurrency - len(self._running)
            if free <= 0:
                self._slot_freed.clear()
                await self._slot_freed.wait()
                continue
            self._woken.clear()
            limit = min(free, cfg.batch_size)
            started, now = self.clock.monotonic(), self.clock.now()
            try:
                after = self._floors.after(started)
                batch = await self.driver.worker_claim(
                    queues=self.queues,
                    limit=limit,
                    worker=self.id,
                    now=now,
                    lease_seconds=cfg.lease_seconds,
                    after=after,
                )
                self._floors.claimed(batch.jobs, after=after, started=started, now=self.clock.monotonic())
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a lost connection, a statement refused, a bug: each said as it is
                await failures.failed_wait(exc)
                continue
            failures.landed()
            for cj in batch.jobs:
                self._start_job(cj)
            if self._stopping:
                break
            if len(batch.jobs) < limit and self._burst is not None:
                if await self._burst.over(batch, full=after is None, now=now):
                    logs.emit(logs.WORKER_BURST_DONE, worker=self.id)
                    self._drain_task = asyncio.get_running_loop().create_task(self.drain(), name="jobs-drain")
                    break
            elif len(batch.jobs) < limit:
                self._floors.due(batch.next_due, wall=self.clock.now(), now=self.clock.monotonic())
                await self._idle(batch.next_due)
            else:
                await asyncio.sleep(0)  # let the jobs just started run before the next claim

    def _start_job(self, cj: ClaimedJob) -> None:
        self._running[cj.row.id] = asyncio.get_running_loop().create_task(self._run_job(cj))

    async def _run_job(self, cj: ClaimedJob) -> None:
        # The slot is freed here, at the end of the job's own task, rather than by a done
        # callback: one callback scheduled per job was measurable in a drain.
        job_id = cj.row.id
        try:
            ex = await self.runner.run(cj)
        except Exception as exc:
            logs.emit(
                logs.WORKER_SETTLE_FAILED,
                logging.ERROR,
                job_id=job_id,
                what="run",
                error=logs.short_error(exc),
                worker=self.id,
            )
            # Given up: no renewal keeps the row running, so its lease lapses and it is re-delivered.
            lease = self.keeper.leases.get(job_id)
            if lease is not None:
                self.keeper.release(lease)
            return
        finally:
            self._running.pop(job_id, None)
            self._slot_freed.set()
        if ex is None:  # a completion: reported once its ack lands (_ack_settled)
            return
        if ex.outcome == "released":
            self.released.append(ex.job_id)
        if self.on_execution is not None:
            asyncio.get_running_loop().call_soon(self.on_execution, ex)  # once the task has ended

    def _ack_settled(self, p: Pending, outcome: str) -> None:
        if self.on_execution is not None:
            r = p.row
            self.on_execution(Execution(r.id, r.name, r.queue, r.attempt, outcome, duration=p.duration))

    async def _idle(self, due: datetime | None) -> None:
        """Sleep until NOTIFY, the next due row (the short claim said when) or the poll interval."""
        if self._woken.is_set() or self._stopping:
            return
        wait = self.config.poll_interval
        if due is not None:
            # A row due already but not claimed is locked by another worker's claim right now.
            wait = min(wait, max(0.01, (due - self.clock.now()).total_seconds()))
        await aio.first(self._woken.wait(), self.clock.sleep(wait))

    # --- background loops ----------------------------------------------------------------------

    async def _listen_loop(self) -> None:
        failures = Failures("listen", self.id, self.metrics)  # it polls meanwhile: still ready
        while not self._closing:  # re-read: a cancellation can be swallowed by a racing wake-up
            try:
                woke = await self.driver.queue_wait(queues=self.queues, timeout=self.config.poll_interval)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                await failures.failed_wait(exc)
                continue
            if failures.failing:  # re-subscribed: what was sent meanwhile is unknown, so look now
                failures.landed()
                woke = True
            if woke:
                self._woken.set()

    def _asked(self, beat: Heartbeat) -> None:
        """An operator's drain request, answered by a heartbeat: drained from its own task (drain()
        cancels and awaits the heartbeat loop), once."""
        if self._drain_task is None:
            at = beat.drain_requested_at.isoformat() if beat.drain_requested_at else None
            logs.emit(logs.WORKER_DRAIN_REQUESTED, worker=self.id, by=beat.drain_requested_by, at=at)
            self._drain_task = asyncio.get_running_loop().create_task(self.drain(), name="jobs-drain")

    async def refresh_gauges(self) -> None:
        """One reading of the queue gauges (engine/runtime/gauges.py)."""
        await self._gauges.refresh()


async def _run(service: Callable[[], Awaitable[None]]) -> None:
    await service()
