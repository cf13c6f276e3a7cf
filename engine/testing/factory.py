"""Put jobs, steps, workers, slots and pauses in any state through the driver's own operations.

River's ``testfactory.Job``, without bypassing the statements under test: every row is written by
the operation the engine itself uses (enqueue, claim, nack, step save, heartbeat), so a state made
here is one the engine can really be in. Time comes from the factory's clock: a FakeClock the
caller moves, which is how a seeded hour of history is played in a second.

    f = Factory.of(engine)                      # or Factory(driver, ids, clock)
    job = await f.job(JobState.DEAD, name="charge_invoice", queue="billing")
    (jid,) = await f.enqueue(Enqueue(charge_invoice, {"invoice_id": 7}))
    claim = await f.claim(jid, worker="w-1")
    await f.step(claim, "reserve", 1, result={"hold": "h7"})
    await f.nack(claim, "dead", error="X_GATEWAY_TIMEOUT: ...", error_code="X_GATEWAY_TIMEOUT")
    async with f.app_transaction() as tx:       # the app's own transaction (commit=False: rolled back)
        await f.stage(tx, Enqueue(send_receipt, {"order": 7}))
    await f.relay("relay:a").run_once()          # a relay's pass: claim, publish, mark
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from engine.api import Engine, Enqueue
from engine.clock import Clock, FakeClock
from engine.drivers.base import Driver
from engine.drivers.outbox_lease import claim_lease_ms
from engine.ids import IdFactory
from engine.newjobs import new_job
from engine.outbox_types import OutboxRow
from engine.retry import RetryDecision, RetryPolicy, failure_nack
from engine.services.relay import Relay, RelayConfig
from engine.services.scheduler import Scheduler, SchedulerConfig
from engine.tasks import TaskDefinition
from engine.types import (
    Ack,
    Claim,
    JobRow,
    JobState,
    Nack,
    NackOutcome,
    NewJob,
    StopReason,
    StoredStep,
    WorkerRegistration,
)

WORKER = "w-factory"
LEASE = 30.0


@dataclass(frozen=True)
class RelayClaim:
    """A relay's claim in flight: its rows, leased to ``token`` (what every later mutation fences on)."""

    relay: str
    token: str
    rows: list[OutboxRow]


class Factory:
    def __init__(self, driver: Driver, ids: IdFactory, clock: Clock, *, lease_seconds: float = LEASE) -> None:
        self.driver, self.ids, self.clock, self.lease = driver, ids, clock, lease_seconds

    @classmethod
    def of(cls, engine: Engine) -> Factory:
        return cls(engine.driver, engine.ids, engine.clock)

    async def open(self) -> None:
        """Open the driver on this event loop (a driver's pool belongs to the loop that opened it)."""
        await self.driver.open()

    async def close(self) -> None:
        await self.driver.close()

    @property
    def now(self) -> datetime:
        return self.clock.now()

    def advance(self, seconds: float) -> None:
        """Move a FakeClock on (a real clock moves by itself)."""
        if isinstance(self.clock, FakeClock):
            self.clock.advance(seconds)

    # --- jobs ---------------------------------------------------------------------------------

    async def insert(self, *jobs: NewJob) -> list[str]:
        res = await self.driver.job_enqueue(jobs=list(jobs), now=self.now)
        return [r.id for r in res]

    async def enqueue(self, *specs: Enqueue) -> list[str]:
        """Enqueue declared jobs, built and checked as ``Engine.enqueue`` builds them."""
        now = self.now
        return await self.insert(*(new_job(s, now, self.ids.new()) for s in specs))

    async def claim(self, job_id: str, worker: str = WORKER) -> Claim:
        """Claim exactly this job: everything else due in its queue is claimed and handed back, so
        the factory works on a queue that already holds jobs."""
        row = await self.get(job_id)
        claimed = await self.driver.worker_claim(
            queues=[row.queue], limit=1000, worker=worker, now=self.now, lease_seconds=self.lease
        )
        mine = None
        for cj in claimed.jobs:
            if cj.row.id == job_id:
                mine = cj.claim
            else:
                await self.driver.job_nack(nack=Nack(cj.claim, "release", run_at=cj.row.run_at), now=self.now)
        assert mine is not None, f"the factory could not claim {job_id}: not due, or its queue is paused"
        return mine

    async def claim_due(self, queue: str, worker: str = WORKER, limit: int = 1000) -> list[Claim]:
        claimed = await self.driver.worker_claim(
            queues=[queue], limit=limit, worker=worker, now=self.now, lease_seconds=self.lease
        )
        return [cj.claim for cj in claimed.jobs]

    async def complete(self, *claims: Claim, result: Any = None) -> list[str]:
        acks = [Ack(c, {"ok": True} if result is None else result) for c in claims]
        return await self.driver.job_ack_many(acks=acks, now=self.now)

    async def nack(
        self,
        claim: Claim,
        outcome: NackOutcome,
        *,
        run_at: datetime | None = None,
        error: str | None = None,
        error_code: str | None = None,
        stop_reason: StopReason | None = None,
        wait: dict[str, Any] | None = None,
        traceback: str | None = None,
    ) -> bool:
        """retry | dead | park | suspend | release, as the worker hands a job back."""
        nack = Nack(
            claim,
            outcome,
            run_at=run_at,
            error=error,
            error_code=error_code,
            stop_reason=stop_reason,
            wait=wait,
            traceback=traceback,
        )
        return await self.driver.job_nack(nack=nack, now=self.now)

    async def fan_in_suspend(self, claim: Claim, wait: dict[str, Any], *, started: datetime, event_poll: float) -> bool:
        """Suspend a fan-in's run (``ctx.step.wait_for_jobs``) at a look made now, until its next
        look as the engine schedules it from the wait's start."""
        from engine.runtime.fanin import next_look

        return await self.nack(claim, "suspend", run_at=next_look(started, self.now, event_poll), wait=wait)

    async def fail(
        self, claim: Claim, exc: BaseException, policy: RetryPolicy, *, traceback: str | None = None
    ) -> RetryDecision:
        """Settle a claimed job's attempt as failed by ``exc``, as the worker settles a handler's
        failure under ``policy``: retried or dead, its error text, code, fix and traceback (or
        ``traceback``, a story's own: an exception built for a test was never raised)."""
        row = await self.get(claim.job_id)
        nack, decision = failure_nack(
            claim, exc, policy, attempt=row.attempt, max_attempts=row.max_attempts, now=self.now
        )
        if traceback is not None:
            nack = replace(nack, traceback=traceback)
        await self.driver.job_nack(nack=nack, now=self.now)
        return decision

    async def cancel(self, job_id: str, *, actor: str = "factory", note: str | None = None) -> None:
        await self.driver.job_cancel(job_id=job_id, tenant=None, now=self.now, actor=actor, note=note)

    async def renew(self, claims: list[Claim], *, worker: str) -> None:
        """Renew job leases and the worker's slots, as a live worker's renewer does."""
        await self.driver.job_renew_many(claims=claims, now=self.now, lease_seconds=self.lease)
        await self.driver.slot_renew_many(
            worker=worker, job_ids=[c.job_id for c in claims], now=self.now, lease_seconds=self.lease
        )

    async def get(self, job_id: str) -> JobRow:
        row = await self.driver.job_get(job_id=job_id)
        assert row is not None, f"no job has id {job_id}"
        return row

    async def job(
        self,
        state: JobState = JobState.READY,
        *,
        name: str = "send_email",
        queue: str = "default",
        tenant: str | None = None,
        key: str | None = None,
        input: Any = None,
        max_attempts: int = 3,
        priority: int = 0,
        run_at: datetime | None = None,
    ) -> JobRow:
        """One job of ``name`` (no declaration needed) in ``state``; returns its row."""
        jid = self.ids.new()
        now = self.now
        delayed = state is JobState.DELAYED
        new = NewJob(
            id=jid,
            name=name,
            queue=queue,
            idempotency_key=key or f"k:{jid}",
            input=input if input is not None else {"n": 1},
            max_attempts=max_attempts,
            tenant=tenant,
            run_at=(run_at or now + timedelta(hours=1)) if delayed else run_at,
            priority=priority,
        )
        (res,) = await self.driver.job_enqueue(jobs=[new], now=now)
        assert not res.deduped, f"a live job already holds the key {new.idempotency_key!r}"
        if state in (JobState.READY, JobState.DELAYED):
            return await self.get(jid)
        if state is JobState.CANCELLED:
            await self.cancel(jid)
            return await self.get(jid)
        claim = await self.claim(jid)
        if state is JobState.COMPLETED:
            assert await self.complete(claim) == [jid]
        elif state is JobState.DEAD:
            assert await self.nack(claim, "dead", error="X_BOOM: boom", error_code="X_BOOM", stop_reason="terminal")
        elif state is JobState.PARKED:
            assert await self.nack(claim, "park", run_at=now + timedelta(seconds=5), wait={"kind": "limit"})
        elif state is JobState.SUSPENDED:
            assert await self.nack(claim, "suspend", run_at=now + timedelta(days=3), wait={"kind": "sleep"})
        return await self.get(jid)

    # --- steps, workers, limits, queues -------------------------------------------------------

    async def step(
        self,
        claim: Claim,
        name: str,
        seq: int,
        *,
        kind: str = "run",
        status: str = "completed",
        took: float = 0.2,
        result: Any = None,
        error: str | None = None,
        wait: dict[str, Any] | None = None,
        attempt: int = 1,
    ) -> None:
        """Record a step the way a run does; the clock moves on by ``took``."""
        started = self.now
        self.advance(took)
        step = StoredStep(
            job_id=claim.job_id,
            name=name,
            seq=seq,
            kind=kind,  # type: ignore[arg-type]
            status=status,  # type: ignore[arg-type]
            attempt=attempt,
            run=claim.run,
            started_at=started,
            finished_at=None if status == "waiting" else self.now,
            result=result,
            error=error,
            wait=wait,
        )
        assert await self.driver.step_save(claim=claim, step=step), f"step {name} of {claim.job_id} was not saved"

    async def worker(self, id: str, *, host: str, pid: int, queues: tuple[str, ...], concurrency: int) -> None:
        await self.driver.worker_register(worker=WorkerRegistration(id, host, pid, queues, concurrency), now=self.now)

    async def heartbeat(self, id: str, *, in_use: int = 0) -> None:
        await self.driver.worker_heartbeat(id=id, in_use=in_use, stopping=False, now=self.now)

    async def hold_slot(self, key: str, *, limit: int, job_id: str, worker: str) -> int:
        slot = await self.driver.slot_acquire(
            key=key, limit=limit, job_id=job_id, worker=worker, now=self.now, lease_seconds=self.lease
        )
        assert slot is not None, f"every slot of {key} is held"
        return slot

    async def take_token(self, key: str, *, limit: int, per: float) -> float:
        """Take a token from a rate limiter's bucket, as an admitted job does."""
        return await self.driver.rate_take(key=key, limit=limit, per=per, now=self.now)

    async def pause(self, queue: str, *, actor: str = "factory", note: str | None = None) -> None:
        await self.driver.queue_pause(queue=queue, paused=True, actor=actor, note=note, now=self.now)

    def scheduler(
        self,
        tasks: Iterable[TaskDefinition],
        *,
        holder: str,
        host: str | None = None,
        pid: int | None = None,
        grace: float | None = None,
    ) -> Scheduler:
        """The scheduler a worker runs, on the factory's clock: each ``await s.run_once()`` is one
        tick (lead or follow, enqueue what fell due, advance the watermarks). A caller that ticks
        it less often than a real one would widens ``grace`` (SchedulerConfig's): an occurrence
        older than that at its tick was missed, and its task's catch-up decides whether it runs."""
        return Scheduler(
            self.driver,
            self.clock,
            tasks,
            holder=holder,
            config=SchedulerConfig(grace=grace),
            ids=self.ids,
            host=host,
            pid=pid,
        )

    # --- the outbox -------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def app_transaction(self, *, commit: bool = True) -> AsyncIterator[Any]:
        """An application's own transaction to stage in, as an app holds one: on PostgreSQL a psycopg
        connection of its own (never the engine's pool) inside ``conn.transaction()``, on the memory
        driver its ``transaction()``. Committed on a clean exit; rolled back on an exception, or at
        the end when ``commit`` is False (the app's order failed after its stage)."""
        if self.driver.kind == "memory":
            tx = self.driver.transaction()  # type: ignore[attr-defined]
            with tx:
                yield tx
                if not commit:
                    tx.rollback()
            return
        import psycopg

        async with await psycopg.AsyncConnection.connect(self.driver.dsn) as conn:  # type: ignore[attr-defined]
            async with conn.transaction() as t:
                yield conn
                if not commit:
                    raise psycopg.Rollback(t)

    async def stage(self, tx: Any, *specs: Enqueue) -> list[str]:
        """Stage declared jobs in ``tx`` (an ``app_transaction``), checked and written as
        ``Engine.astage_many`` does; answers the outbox rows' ids."""
        eng = Engine(self.driver, clock=self.clock, ids=self.ids)
        return [s.id for s in await eng.astage_many(tx, list(specs))]

    def relay(self, relay: str, *, batch_size: int = 250, lease_ms: int | None = None) -> Relay:
        """The outbox relay a worker runs, on the factory's clock and ids: each ``await
        r.run_once()`` is one pass (heartbeat, claim, publish, mark)."""
        return Relay(
            self.driver,
            self.clock,
            config=RelayConfig(id=relay, batch_size=batch_size, lease_ms=lease_ms),
            ids=self.ids,
        )

    async def relay_claim(self, relay: str, *, limit: int = 250, lease_ms: int | None = None) -> RelayClaim:
        """A relay's pass stopped between its claim and its mark: its heartbeat, then up to ``limit``
        rows leased to it in stage order (I17), as a relay holds them while it publishes."""
        await self.driver.outbox_relay_beat(relay=relay, now=self.now)
        token = self.ids.new()
        rows = await self.driver.outbox_claim(
            relay=relay, token=token, limit=limit, now=self.now, lease_ms=claim_lease_ms(lease_ms)
        )
        return RelayClaim(relay, token, rows)

    async def relay_failed(self, claim: RelayClaim, error: str) -> list[str]:
        """The claim's publish failed at its first row with ``error``: as a relay's pass does (I20),
        that row records one more attempt and the error, and every row is handed back at once."""
        ids = [r.id for r in claim.rows]
        failed = ids[0] if ids else None
        return await self.driver.outbox_release(token=claim.token, ids=ids, failed=failed, error=error, now=self.now)


async def make_job(
    driver: Driver, ids: IdFactory, now: datetime, state: JobState = JobState.READY, **kw: Any
) -> JobRow:
    """A job in ``state`` at ``now``: ``Factory.job`` for tests that hold a driver and a time."""
    return await Factory(driver, ids, FakeClock(now)).job(state, **kw)


def claim_of(row: JobRow) -> Claim:
    """The claim of a running job's row, to act on it as its worker would."""
    assert row.claimed_by is not None, f"job {row.id} is not claimed"
    return Claim(row.id, row.claimed_by, row.run)
