"""I21's leader fence on both halves, run against every driver: a scheduler step is fenced on the
lease's holder AND its term. A process whose lease lapsed while it stalled, and that then took the
lease again (a new term, the same holder), must not write a step it planned under its old term:
only the term tells the two ticks of one holder apart."""

from __future__ import annotations

from datetime import timedelta

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.schedule import instant_text, occurrence_key
from tests.contract.test_schedules import LEADER, decl


async def test_i21_a_step_planned_under_an_earlier_term_of_the_same_holder_is_refused(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    await driver.schedule_declare(tasks=[decl()], now=clock.now())
    old = await driver.leader_acquire(name=LEADER, holder="a", now=clock.now(), lease_seconds=30)
    assert old is not None
    at = clock.now() + timedelta(minutes=5)
    clock.advance(60)  # a stalled past its lease; b led for a while and moved no watermark ...
    assert await driver.leader_acquire(name=LEADER, holder="b", now=clock.now(), lease_seconds=30) is not None
    clock.advance(60)
    new = await driver.leader_acquire(name=LEADER, holder="a", now=clock.now(), lease_seconds=30)
    assert new is not None and new > old  # ... and a took the lease again: a new term

    def step(term: int):  # type: ignore[no-untyped-def]
        return driver.schedule_advance(
            task="t.every5",
            expected=None,
            at=at,
            skipped=0,
            job_id=ids.new(),
            key=occurrence_key("t.every5", at),
            scheduled_for=instant_text(at),
            leader=LEADER,
            holder="a",
            term=term,
            now=clock.now(),
        )

    assert not (await step(old)).moved  # the stalled tick's step
    assert [r.watermark for r in await driver.schedule_list()] == [None]
    assert (await step(new)).moved
    assert [r.watermark for r in await driver.schedule_list()] == [at]
