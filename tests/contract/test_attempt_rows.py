"""One run is one attempt row, on every driver: a poll of an event wait (a claim that finds no
event and suspends again) is not an attempt. A claim that resumes a suspended run continues its
attempt row, whatever ends it (a suspension again, completion, a failure, a cancel, a lost lease),
with the run's first start kept; a new attempt (after a retry) is a new row."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.runtime.steps import StepApi
from engine.types import JobRow, JobState
from tests.contract.test_steps_harness import attempt, claim_api, enqueue, get

POLL = 5.0


def waiter(fail: list[bool] | None = None):  # type: ignore[no-untyped-def]
    async def handler(step: StepApi, row: JobRow) -> Any:
        await step.run("before", lambda: 1)
        got = await step.wait_for_event("approved", event="workspace.approved", match={"ws": 7}, timeout=3600)
        if fail and fail.pop(0):
            raise RuntimeError("boom after the event")
        return got

    return handler


async def _polls(driver: Driver, clock: FakeClock, n: int) -> None:
    for _ in range(n):
        clock.advance(POLL)
        assert (await attempt(driver, clock, waiter(), event_poll=POLL)).kind == "suspended"


async def test_polls_of_an_event_wait_keep_one_attempt_row_and_the_completion_is_that_row(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock)
    first = clock.now()
    assert (await attempt(driver, clock, waiter(), event_poll=POLL)).kind == "suspended"
    await _polls(driver, clock, 15)  # 16 claims in all: 15 polls found no event
    (row,) = await driver.job_attempts(job_id=jid)
    assert (row.attempt, row.outcome, row.started_at, row.finished_at) == (1, "suspended", first, clock.now())
    await driver.event_send(
        id=ids.new(), name="workspace.approved", payload={"ws": 7}, tenant=None, actor="ops", now=clock.now()
    )
    done = await attempt(driver, clock, waiter(), event_poll=POLL)
    assert done.kind == "completed" and done.result == {"ws": 7}
    (row,) = await driver.job_attempts(job_id=jid)
    job = await get(driver, jid)
    assert (row.attempt, row.outcome, row.started_at, row.run) == (1, "completed", first, job.run)
    assert job.run == 17 and job.attempt == 1  # 17 claims, one attempt


async def test_a_resumed_run_that_fails_is_one_retried_row_and_the_next_attempt_its_own(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock)
    first = clock.now()
    await attempt(driver, clock, waiter(), event_poll=POLL)
    await _polls(driver, clock, 3)
    await driver.event_send(
        id=ids.new(), name="workspace.approved", payload={"ws": 7}, tenant=None, actor="ops", now=clock.now()
    )
    assert (await attempt(driver, clock, waiter([True]), event_poll=POLL)).kind == "failed"
    clock.advance(1)
    assert (await attempt(driver, clock, waiter([False]), event_poll=POLL)).kind == "completed"
    rows = await driver.job_attempts(job_id=jid)
    assert [(a.attempt, a.outcome) for a in rows] == [(1, "retried"), (2, "completed")]
    assert rows[0].started_at == first and rows[0].error is not None and "boom" in rows[0].error


async def test_a_cancelled_or_lost_resumed_run_ends_its_one_attempt_row(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    cancelled = await enqueue(driver, ids, clock)
    await attempt(driver, clock, waiter(), event_poll=POLL)
    await _polls(driver, clock, 2)
    clock.advance(POLL)
    claimed = await claim_api(driver, clock, event_poll=POLL)  # resumed, and cancelled while it runs
    assert claimed is not None
    await driver.job_cancel(job_id=cancelled, tenant=None, now=clock.now(), actor="ops")
    assert [a.outcome for a in await driver.job_attempts(job_id=cancelled)] == ["cancelled"]

    lost = await enqueue(driver, ids, clock, key="other")
    await attempt(driver, clock, waiter(), event_poll=POLL)
    clock.advance(POLL)
    assert await claim_api(driver, clock, worker="dead-worker", event_poll=POLL) is not None
    term = await driver.leader_acquire(name="maintenance", holder="m", now=clock.now(), lease_seconds=600)
    assert term is not None
    clock.advance(61)  # past the harness's 60 s lease
    assert (lost, JobState.READY) in await driver.job_rescue(
        leader="maintenance", holder="m", term=term, now=clock.now(), limit=10
    )
    ((a, outcome, worker),) = [(a.attempt, a.outcome, a.worker) for a in await driver.job_attempts(job_id=lost)]
    assert (a, outcome, worker) == (1, "lost", "dead-worker")


async def test_a_retry_from_step_of_a_resumed_completed_job_keeps_one_row_per_run(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock)
    await attempt(driver, clock, waiter(), event_poll=POLL)
    await _polls(driver, clock, 2)
    await driver.event_send(
        id=ids.new(), name="workspace.approved", payload={"ws": 7}, tenant=None, actor="ops", now=clock.now()
    )
    assert (await attempt(driver, clock, waiter(), event_poll=POLL)).kind == "completed"
    clock.advance(1)
    res = await driver.job_retry_from_step(job_id=jid, step_name="approved", tenant=None, now=clock.now(), actor="ops")
    assert res.outcome == "retried"
    assert [(a.attempt, a.outcome) for a in await driver.job_attempts(job_id=jid)] == [(1, "completed")]
    clock.advance(timedelta(seconds=1).total_seconds())
    assert (await attempt(driver, clock, waiter(), event_poll=POLL)).kind == "completed"  # the event is found again
    assert [(a.attempt, a.outcome) for a in await driver.job_attempts(job_id=jid)] == [
        (1, "completed"),
        (1, "completed"),
    ]
