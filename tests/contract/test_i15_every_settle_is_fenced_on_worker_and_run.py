"""I15 for every way a claimed row is settled or renewed, run against every driver: each nack
outcome (retry, release, park, suspend, dead) and the renewal are fenced on BOTH halves of the
claimant, the worker id and the run. The stale run is the same worker's earlier claim of the row
(its lease lapsed, and the same worker claimed the row again), so only the run tells them apart."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.testing import make_job
from engine.types import Ack, Claim, JobState, Nack

LEASE = 30.0


async def reclaimed_by_the_same_worker(driver: Driver, ids: IdFactory, clock: FakeClock) -> tuple[Claim, Claim]:
    """A job claimed by w1, handed back, and claimed by w1 again: (the stale claim, the live one)."""
    row = await make_job(driver, ids, clock.now())
    claim = lambda: driver.worker_claim(  # noqa: E731
        queues=["default"], limit=1, worker="w1", now=clock.now(), lease_seconds=LEASE
    )
    (first,) = (await claim()).jobs
    assert await driver.job_nack(nack=Nack(first.claim, "release"), now=clock.now())
    (second,) = (await claim()).jobs
    assert second.row.id == row.id and second.claim.worker == first.claim.worker
    assert second.claim.run == first.claim.run + 1
    return first.claim, second.claim


def nack_of(claim: Claim, outcome: str, clock: FakeClock) -> Nack:
    later = clock.now() + timedelta(seconds=60)
    if outcome == "retry":
        return Nack(claim, "retry", run_at=later, error="X_STALE: stale", error_code="X_STALE")
    if outcome == "dead":
        return Nack(claim, "dead", error="X_STALE: stale", error_code="X_STALE", stop_reason="terminal")
    if outcome == "park":
        return Nack(claim, "park", run_at=later, wait={"kind": "limit", "limit": "concurrency", "key": "k"})
    if outcome == "suspend":
        return Nack(claim, "suspend", run_at=later, wait={"kind": "sleep"})
    return Nack(claim, "release")


@pytest.mark.parametrize("outcome", ["retry", "release", "park", "suspend", "dead"])
async def test_i15_a_nack_from_a_stale_run_or_another_worker_is_refused(
    driver: Driver, ids: IdFactory, clock: FakeClock, outcome: str
) -> None:
    stale, live = await reclaimed_by_the_same_worker(driver, ids, clock)
    other = Claim(live.job_id, "w-other", live.run)
    for claimant in (stale, other):
        assert not await driver.job_nack(nack=nack_of(claimant, outcome, clock), now=clock.now()), claimant
        row = await driver.job_get(job_id=live.job_id)
        assert row is not None
        assert (row.state, row.claimed_by, row.run, row.last_error) == (JobState.RUNNING, "w1", live.run, None)
    # The live claim still settles its own row.
    assert await driver.job_ack_many(acks=[Ack(live, {"ok": True})], now=clock.now()) == [live.job_id]


async def test_i15_a_renewal_from_a_stale_run_is_lost_and_extends_nothing(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    stale, live = await reclaimed_by_the_same_worker(driver, ids, clock)
    before = await driver.job_get(job_id=live.job_id)
    assert before is not None and before.lease_until is not None
    clock.advance(10)
    (r,) = await driver.job_renew_many(claims=[stale], now=clock.now(), lease_seconds=LEASE)
    assert r.status == "lost"
    after = await driver.job_get(job_id=live.job_id)
    assert after is not None and after.lease_until == before.lease_until
    (ok,) = await driver.job_renew_many(claims=[live], now=clock.now(), lease_seconds=LEASE)
    assert ok.status == "ok" and ok.lease_until == clock.now() + timedelta(seconds=LEASE)
