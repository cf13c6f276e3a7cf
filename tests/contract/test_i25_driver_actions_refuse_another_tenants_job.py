"""I25 at the driver, run against every driver: each id-addressed action (cancel, retry a dead
job, discard a dead letter) given a tenant answers None for a job of another tenant and changes
nothing, whatever the operator layer above checked first. The same call with the job's own tenant,
or with none (an operator of the whole fleet), acts."""

from __future__ import annotations

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.testing import make_job
from engine.types import JobState


async def test_i25_cancel_retry_and_discard_at_the_driver_refuse_another_tenants_job(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    now = clock.now()
    dead = await make_job(driver, ids, now, state=JobState.DEAD, tenant="acme", key="dead:1")
    doomed = await make_job(driver, ids, now, state=JobState.DEAD, tenant="acme", key="dead:2")
    ready = await make_job(driver, ids, now, tenant="acme", key="live:1")
    kw = dict(tenant="globex", now=now, actor="ops")
    assert await driver.job_retry_dead(job_id=dead.id, **kw) is None  # type: ignore[arg-type]
    assert await driver.job_discard(job_id=doomed.id, **kw) is None  # type: ignore[arg-type]
    assert await driver.job_cancel(job_id=ready.id, **kw) is None  # type: ignore[arg-type]
    assert await driver.job_get(job_id=dead.id) == dead
    assert await driver.job_get(job_id=doomed.id) == doomed
    assert await driver.job_get(job_id=ready.id) == ready
    assert await driver.job_history(job_id=dead.id) == []
    retried = await driver.job_retry_dead(job_id=dead.id, tenant="acme", now=now, actor="ops")
    assert retried is not None and retried.changed
    discarded = await driver.job_discard(job_id=doomed.id, tenant=None, now=now, actor="ops")
    assert discarded is not None and discarded.changed
    cancelled = await driver.job_cancel(job_id=ready.id, tenant="acme", now=now, actor="ops")
    assert cancelled is not None
