"""A rescue or a prune pass bounded by a limit takes its rows in one total order, the time first and
the id after it, so when times tie the same rows go on every run and on both drivers: the oldest
lapsed lease or settled row first, then the lowest id. The rows are written in the reverse of their
ids' order, so an order that leaned on where a row was stored would take other rows."""

from __future__ import annotations

from datetime import timedelta

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.testing import Factory
from engine.types import NewJob

LEASE = 30.0
LEADER = {"leader": "maintenance", "holder": "m"}


def _four(f: Factory, ids: IdFactory) -> tuple[str, str, str, str]:
    """Four ids in ascending order, none of them enqueued yet."""
    a, b, c, d = ids.many(4, f.now)
    assert a < b < c < d
    return a, b, c, d


async def _enqueue(f: Factory, *job_ids: str) -> None:
    await f.insert(*(NewJob(jid, "a", "q", f"k:{jid}", {"n": 1}, 3) for jid in job_ids))


async def _term(driver: Driver, clock: FakeClock) -> int:
    term = await driver.leader_acquire(name="maintenance", holder="m", now=clock.now(), lease_seconds=3600)
    assert term is not None
    return term


async def test_a_limited_rescue_takes_the_longest_lapsed_lease_first_and_ties_by_id(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock, lease_seconds=LEASE)
    a, b, c, d = _four(f, ids)
    await _enqueue(f, d)
    assert len(await f.claim_due("q", worker="w-1")) == 1  # d's lease lapses first
    clock.advance(1)
    await _enqueue(f, c, b, a)
    assert len(await f.claim_due("q", worker="w-2")) == 3  # the same lease_until for all three
    clock.advance(LEASE + 5)
    term = await _term(driver, clock)
    first = await driver.job_rescue(**LEADER, term=term, now=clock.now(), limit=3)
    assert {jid for jid, _ in first} == {d, a, b}
    rest = await driver.job_rescue(**LEADER, term=term, now=clock.now(), limit=3)
    assert {jid for jid, _ in rest} == {c}


async def test_a_limited_prune_takes_the_oldest_settled_row_first_and_ties_by_id(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock)
    a, b, c, d = _four(f, ids)
    await _enqueue(f, d)
    await f.complete(*await f.claim_due("q"))  # d finishes first
    clock.advance(1)
    await _enqueue(f, c, b, a)
    claims = await f.claim_due("q")
    assert len(claims) == 3
    await f.complete(*claims)  # the same finished_at for all three
    clock.advance(8 * 86400)
    term = await _term(driver, clock)
    window = {"before": clock.now() - timedelta(days=7), "dead_before": clock.now() - timedelta(days=30)}
    first = await driver.job_prune(**LEADER, term=term, now=clock.now(), **window, limit=3)
    assert set(first) == {d, a, b}
    assert await driver.job_prune(**LEADER, term=term, now=clock.now(), **window, limit=3) == [c]
