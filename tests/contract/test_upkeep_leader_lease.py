"""The leader lease (leader_acquire, leader_release) at its edges, run against every driver: a lease
holds up to and including its last instant, a renewal keeps the term and moves the end, the term
grows only on a change of holder, each name is a lease of its own, and a release ends the lease at
once for the holder's current term only."""

from __future__ import annotations

from datetime import timedelta

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.testing import make_job
from engine.types import JobState

NAME = "maintenance"


async def _acquire(driver: Driver, clock: FakeClock, holder: str, lease: float = 10.0, name: str = NAME) -> int | None:
    return await driver.leader_acquire(name=name, holder=holder, now=clock.now(), lease_seconds=lease)


async def _fenced(driver: Driver, ids: IdFactory, clock: FakeClock, holder: str, term: int, name: str = NAME) -> bool:
    """Whether ``holder`` at ``term`` passes the leader's fence now: a prune of everything settled
    before now deletes a row only for the leader (the row is made anew for each check)."""
    row = await make_job(driver, ids, clock.now() - timedelta(days=1), state=JobState.COMPLETED)
    pruned = await driver.job_prune(
        leader=name,
        holder=holder,
        term=term,
        now=clock.now(),
        before=clock.now(),
        dead_before=clock.now(),
        limit=1_000,
    )
    return row.id in pruned


async def test_a_lease_holds_through_its_last_instant_and_passes_to_another_holder_just_after(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    assert await _acquire(driver, clock, "a", lease=10) == 1
    clock.advance(10)  # the lease's last instant: still a's
    assert await _acquire(driver, clock, "b") is None
    assert await _fenced(driver, ids, clock, "a", 1)
    clock.advance(0.000001)
    assert not await _fenced(driver, ids, clock, "a", 1)  # lapsed, though nobody took it yet
    assert await _acquire(driver, clock, "b") == 2
    assert not await _fenced(driver, ids, clock, "a", 1)
    assert await _fenced(driver, ids, clock, "b", 2)


async def test_a_renewal_keeps_the_term_and_moves_the_end_of_the_lease_from_the_renewal(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    assert await _acquire(driver, clock, "a", lease=10) == 1
    clock.advance(8)
    assert await _acquire(driver, clock, "a", lease=10) == 1  # renewed: now until 18 s
    clock.advance(9)  # 17 s: past the first lease's end, within the renewal's
    assert await _acquire(driver, clock, "b") is None
    assert await _fenced(driver, ids, clock, "a", 1)


async def test_the_same_holder_taking_its_lapsed_lease_back_keeps_its_term(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    assert await _acquire(driver, clock, "a", lease=10) == 1
    clock.advance(60)  # lapsed long ago, and nobody took it
    assert await _acquire(driver, clock, "a", lease=10) == 1  # no change of holder: the same term
    assert await _fenced(driver, ids, clock, "a", 1)
    clock.advance(60)
    assert await _acquire(driver, clock, "b") == 2
    clock.advance(60)
    assert await _acquire(driver, clock, "a") == 3  # each change of holder grows the term


async def test_each_name_is_a_lease_of_its_own_and_a_term_fences_only_its_name(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    assert await _acquire(driver, clock, "a", name="maintenance") == 1
    assert await _acquire(driver, clock, "b", name="scheduler") == 1
    assert await _acquire(driver, clock, "b", name="maintenance") is None
    assert await _fenced(driver, ids, clock, "a", 1, name="maintenance")
    assert not await _fenced(driver, ids, clock, "a", 1, name="scheduler")  # b holds that one at term 1
    assert await _fenced(driver, ids, clock, "b", 1, name="scheduler")


async def test_a_release_ends_the_lease_at_once_for_its_holder_and_hands_it_on_at_the_same_instant(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    assert await _acquire(driver, clock, "a", lease=3600) == 1
    await driver.leader_release(name=NAME, holder="a", term=1, now=clock.now())
    assert not await _fenced(driver, ids, clock, "a", 1)  # its term fences nothing from the release on
    assert await _acquire(driver, clock, "b") == 2  # at the same instant: no wait for the lease
    assert await _fenced(driver, ids, clock, "b", 2)


async def test_a_release_by_another_holder_or_with_a_stale_term_changes_nothing(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    assert await _acquire(driver, clock, "a", lease=10) == 1
    clock.advance(11)
    assert await _acquire(driver, clock, "b", lease=3600) == 2
    await driver.leader_release(name=NAME, holder="a", term=1, now=clock.now())  # a's old term
    await driver.leader_release(name=NAME, holder="a", term=2, now=clock.now())  # b's term, not a's lease
    await driver.leader_release(name=NAME, holder="b", term=1, now=clock.now())  # b's lease, a stale term
    await driver.leader_release(name="scheduler", holder="b", term=2, now=clock.now())  # another name
    assert await _acquire(driver, clock, "a") is None
    assert await _fenced(driver, ids, clock, "b", 2)


async def test_releasing_a_lease_nobody_took_creates_none(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    await driver.leader_release(name=NAME, holder="a", term=1, now=clock.now())
    assert not await _fenced(driver, ids, clock, "a", 1)
    assert await _acquire(driver, clock, "b") == 1  # the first holder's term, as if never named
