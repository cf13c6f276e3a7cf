"""I17 across stages, run against every driver: rows staged by separate transactions at separate
times are claimed and published oldest first, whatever the batch size, on both relay paths (the
one-statement pass and the leased claim). A row handed back after a failed publish (I20) is
rewritten by the release, so it no longer sits first in the table's storage: the claim's own
(staged_at, id) order, not the order rows happen to be read in, must still put it first."""

from __future__ import annotations

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.services.relay import Relay, RelayConfig
from tests.contract.test_outbox import LEASE_MS, engine, rows, stage_orders


async def stage_one_at_a_time(driver: Driver, clock: FakeClock, ids: IdFactory, orders: list[int]) -> list[str]:
    eng = engine(driver, clock, ids)
    staged: list[str] = []
    for n in orders:
        staged += await stage_orders(eng, driver, [n])  # its own transaction, its own staged_at
        clock.advance(1)
    return staged


async def test_i17_a_one_statement_pass_takes_the_oldest_stages_first(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    staged = await stage_one_at_a_time(driver, clock, ids, [1, 2, 3, 4, 5])
    r = Relay(driver, clock, config=RelayConfig(id="A", lease_ms=LEASE_MS, batch_size=2))
    assert (await r.run_once()).published == tuple(staged[:2])
    assert (await r.run_once()).published == tuple(staged[2:4])
    assert (await r.run_once()).published == tuple(staged[4:])
    published = [x.published_at for x in await rows(driver, staged)]
    assert published == sorted(published)  # type: ignore[type-var]


async def test_i17_a_released_row_is_claimed_again_before_the_rows_staged_after_it(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    staged = await stage_one_at_a_time(driver, clock, ids, [1, 2, 3])
    token = ids.new()
    (first,) = await driver.outbox_claim(relay="A", token=token, limit=1, now=clock.now(), lease_ms=LEASE_MS)
    assert first.id == staged[0]
    released = await driver.outbox_release(
        token=token, ids=[first.id], failed=first.id, error="ConnectionError: blip", now=clock.now()
    )
    assert released == [staged[0]]
    (again,) = await driver.outbox_claim(relay="B", token=ids.new(), limit=1, now=clock.now(), lease_ms=LEASE_MS)
    assert again.id == staged[0] and again.attempts == 1  # no later row overtakes the failed one
    rest = await driver.outbox_claim(relay="C", token=ids.new(), limit=10, now=clock.now(), lease_ms=LEASE_MS)
    assert [x.id for x in rest] == staged[1:]
