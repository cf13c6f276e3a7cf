"""Put a job in any state through the driver's own operations (River's testfactory.Job, but
without bypassing the statements under test)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.types import Ack, JobRow, JobState, Nack, NewJob

WORKER = "w-factory"


async def make_job(
    driver: Driver,
    ids: IdFactory,
    now: datetime,
    *,
    state: JobState = JobState.READY,
    name: str = "send_email",
    queue: str = "default",
    tenant: str | None = None,
    key: str | None = None,
    input: Any = None,
    max_attempts: int = 3,
    priority: int = 0,
    run_at: datetime | None = None,
) -> JobRow:
    jid = ids.new()
    new = NewJob(
        id=jid,
        name=name,
        queue=queue,
        idempotency_key=key or f"k:{jid}",
        input=input if input is not None else {"n": 1},
        max_attempts=max_attempts,
        tenant=tenant,
        run_at=run_at if state is not JobState.DELAYED else (run_at or now + timedelta(hours=1)),
        priority=priority,
    )
    (res,) = await driver.job_enqueue(jobs=[new], now=now)
    assert not res.deduped
    if state in (JobState.READY, JobState.DELAYED):
        return await _get(driver, jid)
    if state is JobState.CANCELLED:
        await driver.job_cancel(job_id=jid, tenant=None, now=now, actor="factory")
        return await _get(driver, jid)
    claimed = await _claim_exactly(driver, jid, queue, now)
    if state is JobState.RUNNING:
        return claimed
    c = _claim_of(claimed)
    if state is JobState.COMPLETED:
        assert await driver.job_ack_many(acks=[Ack(c, {"ok": True})], now=now) == [jid]
    elif state is JobState.DEAD:
        assert await driver.job_nack(
            nack=Nack(c, "dead", error="X_BOOM: boom", error_code="X_BOOM", stop_reason="terminal"), now=now
        )
    elif state is JobState.PARKED:
        assert await driver.job_nack(
            nack=Nack(c, "park", run_at=now + timedelta(seconds=5), wait={"kind": "limit"}), now=now
        )
    elif state is JobState.SUSPENDED:
        assert await driver.job_nack(
            nack=Nack(c, "suspend", run_at=now + timedelta(days=3), wait={"kind": "sleep"}), now=now
        )
    return await _get(driver, jid)


def _claim_of(row: JobRow):  # type: ignore[no-untyped-def]
    from engine.types import Claim

    assert row.claimed_by is not None
    return Claim(row.id, row.claimed_by, row.run)


async def _claim_exactly(driver: Driver, jid: str, queue: str, now: datetime) -> JobRow:
    # Claim everything due in the queue and hand back all but this one, so the factory can be
    # used on a queue that already holds jobs.
    claimed = (await driver.worker_claim(queues=[queue], limit=1000, worker=WORKER, now=now, lease_seconds=30)).jobs
    mine = None
    for cj in claimed:
        if cj.row.id == jid:
            mine = cj.row
        else:
            await driver.job_nack(nack=Nack(cj.claim, "release", run_at=cj.row.run_at), now=now)
    assert mine is not None, f"factory could not claim {jid}"
    return mine


async def _get(driver: Driver, jid: str) -> JobRow:
    row = await driver.job_get(job_id=jid)
    assert row is not None
    return row
