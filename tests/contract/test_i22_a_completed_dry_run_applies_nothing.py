"""I22's ledger, run against every driver: a backfill is applied by a completed WRITE pass only.
A completed dry run, even the newest pass of its name, leaves the backfill pending, so the deploy
gate (X_BACKFILL_PENDING) still holds until a write pass completes."""

from __future__ import annotations

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from tests.contract.test_backfills import _run


async def test_i22_a_backfill_whose_only_completed_pass_is_a_dry_run_is_not_applied(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    dry = _run(ids, clock, dry_run=True)
    await driver.backfill_open(run=dry)
    await driver.backfill_begin(run_id=dry.id, planned=3, now=clock.now())
    clock.advance(1)
    assert await driver.backfill_finish(
        run_id=dry.id, outcome="completed", swept=3, batches=1, error=None, now=clock.now()
    )
    assert await driver.backfill_applied(environment="production") == []
    write = _run(ids, clock)
    await driver.backfill_open(run=write)
    await driver.backfill_begin(run_id=write.id, planned=3, now=clock.now())
    clock.advance(1)
    assert await driver.backfill_finish(
        run_id=write.id, outcome="completed", swept=3, batches=1, error=None, now=clock.now()
    )
    clock.advance(1)
    later_dry = _run(ids, clock, dry_run=True)  # the newest pass, a dry run: the write still applies
    await driver.backfill_open(run=later_dry)
    await driver.backfill_begin(run_id=later_dry.id, planned=0, now=clock.now())
    clock.advance(1)
    await driver.backfill_finish(
        run_id=later_dry.id, outcome="completed", swept=0, batches=0, error=None, now=clock.now()
    )
    assert [a.id for a in await driver.backfill_applied(environment="production")] == [write.id]
