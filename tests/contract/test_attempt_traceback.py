"""A failed attempt's traceback is stored with the attempt, in every driver, beside its message."""

from __future__ import annotations

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.testing import make_job
from engine.types import JobState, Nack

TRACE = (
    'Traceback (most recent call last):\n  File "shop/jobs.py", line 3, in charge\n'
    '    raise ValueError("nope")\nValueError: nope'
)


async def test_a_failed_attempt_stores_its_traceback_and_a_shed_stores_none(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    now = clock.now()
    row = await make_job(driver, ids, now, state=JobState.READY)
    (first,) = (await driver.worker_claim(queues=["default"], limit=1, worker="w1", now=now, lease_seconds=30)).jobs
    failed = Nack(
        first.claim, "retry", run_at=now, error="ValueError: nope", error_code="X_HANDLER_FAILED", traceback=TRACE
    )
    assert await driver.job_nack(nack=failed, now=now)
    (second,) = (await driver.worker_claim(queues=["default"], limit=1, worker="w1", now=now, lease_seconds=30)).jobs
    shed = Nack(second.claim, "park", run_at=now, wait={"kind": "limit", "limit": "concurrency", "key": "k"})
    assert await driver.job_nack(nack=shed, now=now)
    (third,) = (await driver.worker_claim(queues=["default"], limit=1, worker="w1", now=now, lease_seconds=30)).jobs
    dead = Nack(
        third.claim,
        "dead",
        error="ValueError: nope",
        error_code="X_HANDLER_FAILED",
        stop_reason="terminal",
        traceback=TRACE[:40],
    )
    assert await driver.job_nack(nack=dead, now=now)
    attempts = await driver.job_attempts(job_id=row.id)
    assert [(a.outcome, a.error, a.traceback) for a in attempts] == [
        ("retried", "ValueError: nope", TRACE),
        ("parked", None, None),
        ("dead", "ValueError: nope", TRACE[:40]),
    ]
