"""`connect(dsn)` and the Engine facade an app holds: enqueue (sync and async), cancel, read."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from engine.clock import Clock, SystemClock, utc
from engine.codec import check_json_text
from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, X_MALFORMED_ID, X_NOT_FOUND, JobsError
from engine.ids import IdFactory, parse_id
from engine.jobs import JobDefinition
from engine.runtime.steps import check_event, checked_step_retry
from engine.syncbridge import LoopThread
from engine.types import CancelResult, EnqueueResult, JobRow, NewJob, SentEvent, StepRetry

# A batch past this many rows goes out a statement per CHUNK rows, pipelined in one transaction,
# so checking and encoding a chunk overlaps the server's insert of the one before. Batches of
# 1,000 through the engine, two A/B runs of 5 (bench/README.md, session 4): one
# statement 13,582 and 18,910 jobs/s, chunks of 250 14,329 and 20,655 (of 100: 20,357).
CHUNK = 250


class Enqueue(NamedTuple):
    """One job of a batch: ``eng.enqueue_many([Enqueue(send_email, {...}), ...])``. A NamedTuple
    (immutable, keyword-constructible) rather than a frozen dataclass: a batch builds one per job,
    and a frozen dataclass's __init__ cost four times as much."""

    job: JobDefinition
    input: Any
    tenant: str | None = None
    delay: float | None = None
    run_at: datetime | None = None
    priority: int | None = None


def open_driver(dsn: str, **options: Any) -> Driver:
    if dsn.startswith("memory:"):
        from engine.drivers.memory import MemoryDriver

        if options:  # a pool size or a statement timeout it would not honour
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"the memory driver takes no options, got {', '.join(sorted(options))}",
                fix="connect('memory://') without options, or pass them to a postgresql:// DSN",
            )
        return MemoryDriver()
    from engine.drivers.postgres import PostgresDriver

    return PostgresDriver(dsn, **options)


class Engine:
    def __init__(self, driver: Driver, *, clock: Clock | None = None, ids: IdFactory | None = None) -> None:
        self.driver = driver
        self.clock = clock or SystemClock()
        self.ids = ids or IdFactory(self.clock)
        self._bridge = LoopThread()
        self._opened: set[int] = set()

    # --- building rows ---------------------------------------------------------------------

    def _new_jobs(self, specs: Sequence[Enqueue], now: datetime) -> list[NewJob]:
        """Check and build a batch's rows: the first bad one raises, before anything is written."""
        return [self._new_job(s, now, jid) for s, jid in zip(specs, self.ids.many(len(specs), now))]

    @staticmethod
    def _new_job(spec: Enqueue, now: datetime, job_id: str) -> NewJob:
        if not isinstance(spec, Enqueue):
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"a batch holds {spec!r}, not an Enqueue",
                fix="eng.enqueue_many([Enqueue(send_email, {'to': 'a@b.c'}), ...])",
            )
        h, value, tenant, delay, run_at, priority = spec
        if not isinstance(h, JobDefinition):
            raise JobsError(
                "X_NOT_A_JOB", cause=f"{h!r} is not a job handle", fix="pass the function decorated with @job(...)"
            )
        if delay is not None or run_at is not None:
            if delay is not None and run_at is not None:
                raise JobsError(
                    X_INVALID_ARGUMENT,
                    cause="both delay and run_at were given",
                    fix="pass one of delay=SECONDS or run_at=DATETIME",
                )
            if delay is not None and not delay >= 0:
                raise JobsError(X_INVALID_ARGUMENT, cause=f"delay={delay!r} must be >= 0 seconds", fix="delay=10")
            run_at = utc(run_at) if run_at else (now + timedelta(seconds=delay) if delay else None)
        if tenant is not None and (not isinstance(tenant, str) or not tenant):
            raise JobsError(
                X_INVALID_ARGUMENT, cause=f"tenant={tenant!r} must be a non-empty string or None", fix="tenant='acme'"
            )
        inp, text = check_json_text(value, job=h.name)
        return NewJob(
            job_id,
            h.name,
            h.queue,
            h.key_for(inp),
            inp,
            h.retry.attempts,
            tenant,
            run_at,
            h.priority if priority is None else priority,
            text,
        )

    async def _ensure_open(self) -> None:
        loop_id = id(asyncio.get_running_loop())
        if loop_id not in self._opened:
            await self.driver.open()
            self._opened.add(loop_id)

    # --- async API -------------------------------------------------------------------------

    async def aenqueue_many(self, specs: Iterable[Enqueue]) -> list[EnqueueResult]:
        """Enqueue a batch, all or nothing: a row that fails its checks raises and nothing is
        written. Past CHUNK rows the batch goes out a statement per CHUNK rows in one transaction,
        each chunk checked while the server inserts the one before."""
        now = self.clock.now()
        if not isinstance(specs, Sequence):  # a generator of Enqueue is taken too
            specs = list(specs)
        first = self._new_jobs(specs[:CHUNK], now)  # bad input answers before the database
        await self._ensure_open()
        if len(specs) <= CHUNK:
            return await self.driver.job_enqueue(jobs=first, now=now)
        rest = (self._new_jobs(specs[at : at + CHUNK], now) for at in range(CHUNK, len(specs), CHUNK))
        return await self.driver.job_enqueue_chunks(chunks=itertools.chain([first], rest), now=now)

    async def aenqueue(
        self,
        job: JobDefinition,
        input: Any,
        *,
        tenant: str | None = None,
        delay: float | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
    ) -> EnqueueResult:
        return (await self.aenqueue_many([Enqueue(job, input, tenant, delay, run_at, priority)]))[0]

    async def aget(self, job_id: str) -> JobRow:
        jid = self._id(job_id)
        await self._ensure_open()
        row = await self.driver.job_get(job_id=jid)
        if row is None:
            raise JobsError(X_NOT_FOUND, cause=f"no job has id {jid}", fix="jobs ls --json")
        return row

    async def acancel(
        self, job_id: str, *, tenant: str | None = None, actor: str | None = None, note: str | None = None
    ) -> CancelResult:
        jid = self._id(job_id)
        await self._ensure_open()
        res = await self.driver.job_cancel(job_id=jid, tenant=tenant, now=self.clock.now(), actor=actor, note=note)
        if res is None:
            who = f" for tenant {tenant!r}" if tenant is not None else ""
            raise JobsError(X_NOT_FOUND, cause=f"no job has id {jid}{who}", fix="jobs ls --json")
        return res

    async def asend_event(
        self, name: str, payload: dict[str, Any] | None = None, *, tenant: str | None = None, actor: str | None = None
    ) -> SentEvent:
        """Send a durable event: every wait of ``name`` and this tenant whose match the payload
        contains takes it, including waits reached later (``.woken``: waits made claimable now)."""
        name, body, tenant = check_event(name, payload, tenant)
        await self._ensure_open()
        return await self.driver.event_send(
            id=self.ids.new(), name=name, payload=body, tenant=tenant, actor=actor, now=self.clock.now()
        )

    async def aretry_from_step(
        self,
        job_id: str,
        step_name: str,
        *,
        tenant: str | None = None,
        actor: str | None = None,
        note: str | None = None,
    ) -> StepRetry:
        """Re-run a dead or completed job from ``step_name``: that step and the later ones run
        again, earlier ones answer their stored results. A refusal is a clear error; nothing changes."""
        jid = self._id(job_id)
        if not isinstance(step_name, str) or not step_name:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"step_name={step_name!r} must be a non-empty string",
                fix=f"jobs retry {jid} --from-step STEP",
            )
        await self._ensure_open()
        res = await self.driver.job_retry_from_step(
            job_id=jid, step_name=step_name, tenant=tenant, now=self.clock.now(), actor=actor, note=note
        )
        return checked_step_retry(res, tenant=tenant)

    # --- sync API (a private loop on a thread) ---------------------------------------------

    def enqueue_many(self, specs: Iterable[Enqueue]) -> list[EnqueueResult]:
        return self._bridge.run(self.aenqueue_many(specs))

    def enqueue(
        self,
        job: JobDefinition,
        input: Any,
        *,
        tenant: str | None = None,
        delay: float | None = None,
        run_at: datetime | None = None,
        priority: int | None = None,
    ) -> EnqueueResult:
        return self._bridge.run(self.aenqueue(job, input, tenant=tenant, delay=delay, run_at=run_at, priority=priority))

    def get(self, job_id: str) -> JobRow:
        return self._bridge.run(self.aget(job_id))

    def cancel(
        self, job_id: str, *, tenant: str | None = None, actor: str | None = None, note: str | None = None
    ) -> CancelResult:
        return self._bridge.run(self.acancel(job_id, tenant=tenant, actor=actor, note=note))

    def send_event(
        self, name: str, payload: dict[str, Any] | None = None, *, tenant: str | None = None, actor: str | None = None
    ) -> SentEvent:
        return self._bridge.run(self.asend_event(name, payload, tenant=tenant, actor=actor))

    def retry_from_step(
        self,
        job_id: str,
        step_name: str,
        *,
        tenant: str | None = None,
        actor: str | None = None,
        note: str | None = None,
    ) -> StepRetry:
        return self._bridge.run(self.aretry_from_step(job_id, step_name, tenant=tenant, actor=actor, note=note))

    # --- lifecycle -------------------------------------------------------------------------

    @staticmethod
    def _id(job_id: str) -> str:
        jid = parse_id(job_id)
        if jid is None:
            raise JobsError(X_MALFORMED_ID, cause=f"{job_id!r} is not a job id (a UUID)", fix="jobs ls --json")
        return jid

    # --- the embedded worker ------------------------------------------------------------------

    def worker(
        self,
        jobs: Any,
        *,
        queues: Sequence[str] | None = None,
        concurrency: int = 10,
        maintenance: bool = True,
        **options: Any,
    ) -> Any:
        """``async with eng.worker([send_email], queues=["mail"], concurrency=16): ...`` runs a
        worker inside the app's loop; leaving the block drains it (I14). ``jobs``: a Registry, a
        module, a job handle or a list of them. ``options``: WorkerConfig fields (batch_size,
        ack_batch, flush_interval, lease_seconds, grace, ...), maintenance_config, metrics,
        on_execution; scheduler=False never leads the cron scheduler for the @task handles it
        serves (on by default), scheduler_config a SchedulerConfig."""
        from engine.services.maintenance import maintained_worker

        return maintained_worker(
            self.driver,
            jobs,
            clock=self.clock,
            queues=queues,
            concurrency=concurrency,
            maintenance=maintenance,
            **options,
        )

    async def aclose(self) -> None:
        await self.driver.close()

    def close(self) -> None:
        try:
            self._bridge.run(self.driver.close())
        finally:
            self._bridge.stop()


def connect(dsn: str, *, clock: Clock | None = None, ids: IdFactory | None = None, **driver_options: Any) -> Engine:
    """``connect("postgresql://app@db/app")``, or ``connect("memory://")`` for tests and demos."""
    if not isinstance(dsn, str) or not dsn.strip():
        raise JobsError(
            "X_DSN_INVALID",
            cause=f"dsn={dsn!r} is empty",
            fix="connect('postgresql://USER@HOST/DB') or connect('memory://')",
        )
    return Engine(open_driver(dsn, **driver_options), clock=clock, ids=ids)
