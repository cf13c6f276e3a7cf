"""An event sent while its wait is suspending is not left to event_poll, on every driver: the
wait looked for the event and found none, the event is sent (it wakes nothing: the job is still
running, not suspended), then the suspension lands. The suspension itself finds the event and
leaves the job claimable at once. Before, the job slept its whole event_poll (30 s by default)
with its event waiting: the torture run's slowest waiting job took exactly 30 s."""

from __future__ import annotations

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.runtime.steps import StepApi
from engine.runtime.suspend import StepSuspension
from engine.types import JobRow, JobState
from tests.contract.test_steps_harness import attempt, enqueue, get


async def test_i7_an_event_sent_as_its_wait_suspends_wakes_the_job_at_once(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock, tenant="acme")
    clock.advance(1)
    sent: list[int] = []

    async def handler(step: StepApi, row: JobRow) -> object:
        try:
            return await step.wait_for_event("approved", event="order.paid", match={"order": 7})
        except StepSuspension:
            if not sent:  # the event lands between the wait's look and its suspension
                ev = await driver.event_send(
                    id=ids.new(), name="order.paid", payload={"order": 7}, tenant="acme", actor=None, now=clock.now()
                )
                sent.append(ev.woken)
            raise

    out = await attempt(driver, clock, handler, event_poll=300)
    assert out.kind == "suspended" and sent == [0]  # the send found no suspended wait to wake
    row = await get(driver, jid)
    assert row.state is JobState.SUSPENDED and row.run_at == clock.now()  # claimable now, not in 300 s
    done = await attempt(driver, clock, handler, event_poll=300)  # the same instant: no event_poll wait
    assert done.kind == "completed" and done.result == {"order": 7}


async def test_i7_a_suspension_without_its_event_still_sleeps_its_event_poll(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    # Events that must not wake it: one sent before the job existed, another tenant's, another
    # name's, a payload the match does not contain.
    await driver.event_send(
        id=ids.new(), name="order.paid", payload={"order": 7}, tenant="acme", actor=None, now=clock.now()
    )
    clock.advance(1)
    jid = await enqueue(driver, ids, clock, tenant="acme")
    clock.advance(1)
    for name, payload, tenant in (
        ("order.paid", {"order": 7}, "globex"),
        ("order.refunded", {"order": 7}, "acme"),
        ("order.paid", {"order": 8}, "acme"),
    ):
        await driver.event_send(id=ids.new(), name=name, payload=payload, tenant=tenant, actor=None, now=clock.now())

    async def handler(step: StepApi, row: JobRow) -> object:
        return await step.wait_for_event("approved", event="order.paid", match={"order": 7})

    out = await attempt(driver, clock, handler, event_poll=300)
    assert out.kind == "suspended"
    row = await get(driver, jid)
    assert (row.run_at - clock.now()).total_seconds() == 300
    assert (await attempt(driver, clock, handler)).kind == "nothing-due"
