"""What `why` reads, the same from every driver: a queue's waiting jobs grouped by what they wait
for (queue_waits), and `jobsctl why TARGET` telling a queue from a job id, a mistyped id from a
queue name (X_NOT_FOUND naming the ids it may have meant) and an unknown queue from both."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import X_NOT_FOUND, X_UNKNOWN_QUEUE, JobsError
from engine.ids import IdFactory
from engine.introspect import Introspector
from engine.projections import WaitGroup
from engine.testing import claim_of, make_job
from engine.types import JobState, Nack


async def _suspend(driver: Driver, ids: IdFactory, clock: FakeClock, wait: dict, seconds: float, **kw) -> None:  # type: ignore[type-arg, no-untyped-def]
    row = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, **kw)
    run_at = clock.now() + timedelta(seconds=seconds)
    kind = "park" if wait.get("kind") == "limit" else "suspend"
    assert await driver.job_nack(nack=Nack(claim_of(row), kind, run_at=run_at, wait=wait), now=clock.now())


async def test_queue_waits_groups_the_jobs_a_queue_holds_back_by_what_they_wait_for(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    t0 = clock.now()
    event = {"kind": "event", "step": "paid", "event": "invoice.paid", "match": {}, "timeout_at": None}
    for s in (40, 5, 20):
        await _suspend(driver, ids, clock, event, s, queue="billing")
    await _suspend(driver, ids, clock, {"kind": "sleep", "step": "settle", "until": "x"}, 300, queue="billing")
    await _suspend(driver, ids, clock, {"kind": "limit", "limit": "rate", "key": "tenant:acme"}, 2, queue="billing")
    await make_job(driver, ids, t0, state=JobState.DELAYED, queue="billing")  # due in 60s (the factory's delay)
    await make_job(driver, ids, t0, state=JobState.SUSPENDED, queue="other")
    waits = await driver.queue_waits(queue="billing", now=t0, budget_ms=None)
    delayed = next(g for g in waits if g.kind == "delay")
    assert waits == [
        WaitGroup(JobState.SUSPENDED, "event", "invoice.paid", 3, t0 + timedelta(seconds=5)),
        WaitGroup(JobState.DELAYED, "delay", None, 1, delayed.next_at),
        WaitGroup(JobState.PARKED, "rate", "tenant:acme", 1, t0 + timedelta(seconds=2)),
        WaitGroup(JobState.SUSPENDED, "sleep", None, 1, t0 + timedelta(seconds=300)),
    ]
    assert delayed.next_at > t0
    # A delayed job whose time has come is claimable: it waits for nothing.
    later = await driver.queue_waits(queue="billing", now=delayed.next_at, budget_ms=None)
    assert [g.kind for g in later] == ["event", "rate", "sleep"]


async def test_why_queue_says_what_suspended_jobs_wait_for(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    event = {"kind": "event", "step": "paid", "event": "invoice.paid", "match": {}, "timeout_at": None}
    for _ in range(4):
        await _suspend(driver, ids, clock, event, 5, queue="billing")
    why = await Introspector(driver, clock=clock).why_queue("billing")
    ev = next(c for c in why.causes if c.kind == "event")
    assert (ev.count, ev.event) == (4, "invoice.paid") and "4 jobs of billing are waiting for event" in ev.text
    assert all("Nothing" not in c.text for c in why.causes)


async def test_why_target_tells_a_queue_from_an_id_and_refuses_what_is_neither(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    job = await make_job(driver, ids, clock.now(), state=JobState.DEAD, queue="billing")
    i = Introspector(driver, clock=clock)
    assert (await i.why("billing")).subject == "queue"
    assert (await i.why(job.id[-12:])).target == job.id
    typo = job.id[-12:-1] + ("0" if job.id[-1] != "0" else "1")  # the last digit mistyped
    with pytest.raises(JobsError) as e:
        await i.why(typo)
    assert e.value.code == X_NOT_FOUND and f"did you mean {job.id}" in e.value.cause
    assert e.value.meta["candidates"] == [job.id] and e.value.fix == f"jobsctl why {job.id}"
    with pytest.raises(JobsError) as e:
        await i.why("deadbeefcafe")  # an id no job has, near none: not read as a queue name
    assert e.value.code == X_NOT_FOUND
    with pytest.raises(JobsError) as e:
        await i.why("biling")
    assert e.value.code == X_UNKNOWN_QUEUE and "did you mean 'billing'" in e.value.cause
    with pytest.raises(JobsError) as e:
        await i.why_queue("nosuchqueue")
    assert e.value.code == X_UNKNOWN_QUEUE
