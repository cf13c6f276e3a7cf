"""I10 with one worker on both sides of a re-delivery: a run whose lease lapsed, and whose own
worker claimed the job again (another slot, the next run), must not write a step. The worker id is
the same, so only the run number in the fence refuses the stale run's write."""

from __future__ import annotations

import pytest

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import X_ABORTED, JobsError
from engine.ids import IdFactory
from engine.types import Nack
from tests.contract.test_steps_harness import claim_api, enqueue


async def test_i10_a_stale_run_cannot_write_a_step_after_its_own_worker_reclaimed_the_job(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock)
    stale = await claim_api(driver, clock, worker="w1")
    assert stale is not None
    stale_api, _ = stale
    assert await driver.job_nack(nack=Nack(stale_api.claim, "release", run_at=clock.now()), now=clock.now())
    fresh = await claim_api(driver, clock, worker="w1")
    assert fresh is not None
    fresh_api, row = fresh
    assert (row.claimed_by, row.run) == ("w1", stale_api.claim.run + 1)
    with pytest.raises(JobsError) as err:
        await stale_api.run("charge", lambda: "from the stale run")
    assert err.value.code == X_ABORTED
    assert await driver.step_load(job_id=jid) == []
    assert await fresh_api.run("charge", lambda: "from the fresh run") == "from the fresh run"
    assert [(s.name, s.result, s.run) for s in await driver.step_load(job_id=jid)] == [
        ("charge", "from the fresh run", row.run)
    ]
