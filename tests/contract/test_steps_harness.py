"""Helpers for the durable-steps contract suite (no tests here): enqueue one job, claim it, and run
a handler against a StepApi built on the claimed row, settling the way the runner settles
(ack, retry/dead nack, suspend nack). It drives StepApi directly, below engine/runtime/execute.py,
so the step store's behaviour is pinned on both drivers whatever the runner does around it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.runtime.signal import RunSignal
from engine.runtime.steps import StepApi
from engine.runtime.suspend import StepSuspension
from engine.types import Ack, JobRow, Nack, NewJob

QUEUE = "steps"
Handler = Callable[[StepApi, JobRow], Awaitable[Any]]


async def enqueue(
    driver: Driver,
    ids: IdFactory,
    clock: FakeClock,
    *,
    tenant: str | None = None,
    max_attempts: int = 3,
    key: str | None = None,
    name: str = "provision",
) -> str:
    jid = ids.new()
    (res,) = await driver.job_enqueue(
        jobs=[
            NewJob(
                id=jid,
                name=name,
                queue=QUEUE,
                idempotency_key=key or f"k:{jid}",
                input={"user": 7},
                max_attempts=max_attempts,
                tenant=tenant,
            )
        ],
        now=clock.now(),
    )
    assert not res.deduped
    return jid


@dataclass
class Outcome:
    kind: str  # completed | failed | suspended | nothing-due
    row: JobRow | None = None
    result: Any = None
    error: BaseException | None = None
    suspension: StepSuspension | None = None
    api: StepApi | None = None


async def claim_api(
    driver: Driver,
    clock: FakeClock,
    *,
    worker: str = "w1",
    step_timeout: float | None = None,
    event_poll: float = 30.0,
    signal: RunSignal | None = None,
    engine: Engine | None = None,
) -> tuple[StepApi, JobRow] | None:
    got = (await driver.worker_claim(queues=[QUEUE], limit=1, worker=worker, now=clock.now(), lease_seconds=60)).jobs
    if not got:
        return None
    row = got[0].row
    api = StepApi(
        driver=driver,
        claim=got[0].claim,
        row=row,
        clock=clock,
        signal=signal or RunSignal(),
        step_timeout=step_timeout,
        event_poll=event_poll,
        engine=None if engine is None else lambda: engine,
    )
    return api, row


async def attempt(driver: Driver, clock: FakeClock, handler: Handler, **kw: Any) -> Outcome:
    """One claim of the queue's due job, run and settled."""
    claimed = await claim_api(driver, clock, **kw)
    if claimed is None:
        return Outcome("nothing-due")
    api, row = claimed
    try:
        result = await handler(api, row)
    except StepSuspension as s:
        assert await driver.job_nack(nack=Nack(api.claim, "suspend", run_at=s.run_at, wait=s.wait), now=clock.now())
        return Outcome("suspended", row, suspension=s, api=api)
    except Exception as exc:
        code = getattr(exc, "code", None)
        outcome = "dead" if row.attempt >= row.max_attempts else "retry"
        assert await driver.job_nack(
            nack=Nack(
                api.claim,
                outcome,
                run_at=clock.now(),
                error=f"{code}: {exc}",
                error_code=code,
                stop_reason="attempts-exhausted" if outcome == "dead" else None,
            ),
            now=clock.now(),
        )
        return Outcome("failed", row, error=exc, api=api)
    assert await driver.job_ack_many(acks=[Ack(api.claim, result)], now=clock.now()) == [row.id]
    return Outcome("completed", row, result=result, api=api)


async def get(driver: Driver, jid: str) -> JobRow:
    row = await driver.job_get(job_id=jid)
    assert row is not None
    return row
