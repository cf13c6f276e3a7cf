"""The relay's one-statement pass (outbox_publish_batch): claim, publish and retire a batch together
while no row fails, and the three-step path (claim, publish, mark) the moment one would. Run
against every driver (memory and postgres)."""

from __future__ import annotations

import pytest

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.services.relay import Relay, RelayConfig
from engine.types import JobState
from tests.contract.test_outbox import LEASE_MS, engine, rows, send_receipt, stage_orders


def relay(driver: Driver, clock: FakeClock, name: str, batch_size: int = 250) -> Relay:
    return Relay(driver, clock, config=RelayConfig(id=name, lease_ms=LEASE_MS, batch_size=batch_size))


async def test_i17_a_one_statement_pass_publishes_in_stage_order_and_stamps_its_claim(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    eng = engine(driver, clock, ids)
    staged = await stage_orders(eng, driver, [5, 4, 3, 2, 1])  # one transaction: one staged_at
    r = relay(driver, clock, "A", batch_size=3)
    first = await r.run_once()
    assert first.published == tuple(staged[:3]) and first.claimed == 3  # (staged_at, id) order
    done = await rows(driver, staged[:3])
    assert all(x.claimed_by == "A" and x.claim_token and x.published_at == clock.now() for x in done)
    assert all(x.lease_until is None for x in done)  # retired: no lease left to lapse
    assert len({x.job_id for x in done}) == 3
    assert (await r.run_once()).published == tuple(staged[3:])
    jobs = [await driver.job_get(job_id=x.job_id) for x in await rows(driver, staged)]  # type: ignore[arg-type]
    assert all(j is not None and j.state is JobState.READY for j in jobs)
    # The job ids follow stage order, as the three-step path's enqueue gives them.
    assert [j.input["order"] for j in sorted(jobs, key=lambda j: j.id)] == [5, 4, 3, 2, 1]  # type: ignore[union-attr]
    assert (await r.run_once()).claimed == 0


async def test_i2_a_live_key_in_the_batch_writes_nothing_and_the_three_step_path_dedupes_it(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    eng = engine(driver, clock, ids)
    live = await eng.aenqueue(send_receipt, {"order": 2})
    staged = await stage_orders(eng, driver, [1, 2, 3])
    now = clock.now()
    tried = await driver.outbox_publish_batch(relay="A", token=ids.new(), limit=10, now=now, job_ids=ids.many(10, now))
    assert tried is None  # a plain insert would replay a live key: nothing written
    assert all(x.claim_token is None and x.published_at is None for x in await rows(driver, staged))
    res = await relay(driver, clock, "A").run_once()
    assert res.published == tuple(staged) and res.deduped == 1
    assert (await rows(driver, staged))[1].job_id == live.id


async def test_i2_two_rows_of_one_batch_with_one_key_publish_one_job(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    eng = engine(driver, clock, ids)
    staged = await stage_orders(eng, driver, [7, 7])
    res = await relay(driver, clock, "A").run_once()
    assert res.published == tuple(staged) and res.deduped == 1
    a, b = await rows(driver, staged)
    assert a.job_id == b.job_id


async def test_i18_a_one_statement_pass_never_takes_rows_a_live_claim_holds(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    eng = engine(driver, clock, ids)
    staged = await stage_orders(eng, driver, [1, 2, 3, 4])
    token = ids.new()
    held = await driver.outbox_claim(relay="A", token=token, limit=2, now=clock.now(), lease_ms=LEASE_MS)
    res = await relay(driver, clock, "B").run_once()
    assert res.published == tuple(staged[2:])  # A's two stay A's
    marked = await driver.outbox_mark_published(
        token=token, published=[(x.id, ids.new()) for x in held], now=clock.now()
    )
    assert marked == staged[:2]  # A's fence still holds: its mark retires them


def test_a_one_statement_setting_that_is_not_a_bool_is_refused_at_construction() -> None:
    with pytest.raises(JobsError) as e:
        RelayConfig(one_statement="yes")  # type: ignore[arg-type]
    assert e.value.code == "X_INVALID_ARGUMENT" and "one_statement='yes'" in e.value.cause
