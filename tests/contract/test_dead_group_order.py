"""The dead-letter groups come in one order on both drivers, whichever query answers: the last seen
first, then name, error code and stop reason ascending (a null code or reason first), so a refresh
that found nothing new lists the groups as the one before it did."""

from __future__ import annotations

from datetime import timedelta

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.projections import JobFilter
from engine.testing import Factory
from engine.types import JobState, StopReason


async def _dead(f: Factory, name: str, code: str | None, stop: StopReason | None) -> None:
    row = await f.job(JobState.READY, name=name)
    claim = await f.claim(row.id)
    assert await f.nack(claim, "dead", error="boom", error_code=code, stop_reason=stop)


async def test_dead_groups_seen_at_the_same_instant_come_by_name_code_and_stop_reason_on_both_queries(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock)
    # Written in an order unlike the one expected, all at one instant but the last.
    await _dead(f, "charge_card", "X_DECLINED", "terminal")
    await _dead(f, "charge_card", "X_DECLINED", "attempts-exhausted")
    await _dead(f, "charge_card", "X_DECLINED", None)
    await _dead(f, "charge_card", None, "terminal")
    await _dead(f, "bill", "X_DECLINED", "terminal")
    clock.advance(5)
    await _dead(f, "zeta", "X_LATE", "terminal")
    expected = [
        ("zeta", "X_LATE", "terminal"),
        ("bill", "X_DECLINED", "terminal"),
        ("charge_card", None, "terminal"),
        ("charge_card", "X_DECLINED", None),
        ("charge_card", "X_DECLINED", "attempts-exhausted"),
        ("charge_card", "X_DECLINED", "terminal"),
    ]
    # A filter of the groups' own columns reads the kept counts; a time filter reads the rows.
    for where in (JobFilter(), JobFilter(since=clock.now() - timedelta(hours=1))):
        for _ in range(3):
            view = await driver.dead_groups(where=where, now=clock.now(), budget_ms=None)
            assert [(g.name, g.error_code, g.stop_reason) for g in view.groups] == expected
