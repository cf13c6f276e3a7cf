"""The worker rows' upkeep at its edges, run against every driver: the reaper (worker_reap) deletes
the workers whose heartbeat stopped strictly before its cut-off, and a reaped worker is no longer
named gone nor judged by its presence; worker_gone names the registered workers whose presence was
held and is held no more; an orphan pass (job_rescue_orphaned) takes the running jobs of the named
gone workers, lowest id first up to its limit, and forgets a gone worker once a pass took fewer
than its limit (none at all included)."""

from __future__ import annotations

from datetime import timedelta

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.testing import Factory
from engine.types import Claim, JobState, NewJob, WorkerRegistration

LEASE = 30.0


async def _register(driver: Driver, clock: FakeClock, *wids: str) -> None:
    for wid in wids:
        await driver.worker_register(
            worker=WorkerRegistration(id=wid, host="h", pid=1, queues=("q",), concurrency=4), now=clock.now()
        )


async def _gone(driver: Driver, clock: FakeClock, wid: str) -> None:
    """A registered worker whose presence was held and ended."""
    await _register(driver, clock, wid)
    await driver.worker_presence_hold(id=wid)
    await driver.worker_presence_release(id=wid)


async def _running(f: Factory, worker: str) -> Claim:
    jid = f.ids.new()
    await f.insert(NewJob(jid, "send_email", "q", f"k:{jid}", {"n": 1}, 3))
    return await f.claim(jid, worker=worker)


async def _listed(driver: Driver, clock: FakeClock) -> list[str]:
    return [w.id for w in await driver.worker_list(now=clock.now())]


async def test_the_reaper_takes_the_workers_whose_heartbeat_stopped_strictly_before_its_cutoff(
    driver: Driver, clock: FakeClock
) -> None:
    assert await driver.worker_reap(before=clock.now()) == []  # no worker at all
    t = clock.now()
    await _register(driver, clock, "w-old")
    clock.advance(10)
    await _register(driver, clock, "w-edge")
    clock.advance(10)
    await _register(driver, clock, "w-fresh")
    assert await driver.worker_reap(before=t + timedelta(seconds=10)) == ["w-old"]
    assert await driver.worker_reap(before=t + timedelta(seconds=10)) == []  # each once
    clock.advance(10)
    assert await driver.worker_heartbeat(id="w-edge", in_use=0, stopping=False, now=clock.now())  # t + 30 s
    assert await driver.worker_reap(before=t + timedelta(seconds=25)) == ["w-fresh"]
    assert await _listed(driver, clock) == ["w-edge"]
    assert await driver.worker_heartbeat(id="w-fresh", in_use=0, stopping=False, now=clock.now()) is None


async def test_a_reaped_worker_is_no_longer_named_gone_nor_judged_by_its_presence(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock, lease_seconds=LEASE)
    await _register(driver, clock, "w1")
    await driver.worker_presence_hold(id="w1")
    claim = await _running(f, "w1")
    await driver.worker_presence_release(id="w1")
    assert await driver.worker_gone() == ["w1"]
    clock.advance(1)
    assert await driver.worker_reap(before=clock.now()) == ["w1"]
    assert await driver.worker_gone() == []
    assert await driver.job_rescue_orphaned(workers=["w1"], now=clock.now(), limit=10) == []
    assert (await f.get(claim.job_id)).state is JobState.RUNNING  # its lease decides


async def test_a_worker_is_gone_only_while_its_presence_is_not_held_again(driver: Driver, clock: FakeClock) -> None:
    assert await driver.worker_gone() == []  # no worker at all
    await _register(driver, clock, "w-never")  # never held a presence: never judged
    await _gone(driver, clock, "w2")
    await _gone(driver, clock, "w1")
    assert await driver.worker_gone() == ["w1", "w2"]  # by id
    await driver.worker_presence_hold(id="w2")  # back (a session the server ended, taken again)
    assert await driver.worker_gone() == ["w1"]


async def test_an_orphan_pass_over_nobody_or_over_workers_not_gone_takes_nothing(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock, lease_seconds=LEASE)
    await _register(driver, clock, "w-held", "w-never")
    await driver.worker_presence_hold(id="w-held")
    held = await _running(f, "w-held")
    never = await _running(f, "w-never")
    assert await driver.job_rescue_orphaned(workers=[], now=clock.now(), limit=10) == []
    named = ["w-held", "w-never", "w-unknown"]
    assert await driver.job_rescue_orphaned(workers=named, now=clock.now(), limit=10) == []
    for c in (held, never):
        assert (await f.get(c.job_id)).state is JobState.RUNNING
    assert await _listed(driver, clock) == ["w-held", "w-never"]  # no row forgotten


async def test_an_orphan_pass_takes_only_running_jobs_of_a_gone_worker_and_forgets_it_once_it_took_them_all(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock, lease_seconds=LEASE)
    await _register(driver, clock, "w1", "w2")
    await driver.worker_presence_hold(id="w1")
    done = await _running(f, "w1")
    assert await f.complete(done) == [done.job_id]
    handed_back = await _running(f, "w1")
    assert await f.nack(handed_back, "retry", run_at=clock.now() + timedelta(hours=1), error="X_BOOM: boom")
    await driver.worker_presence_release(id="w1")
    before = {c.job_id: await f.get(c.job_id) for c in (done, handed_back)}
    assert await driver.job_rescue_orphaned(workers=["w1"], now=clock.now(), limit=10) == []
    assert {jid: await f.get(jid) for jid in before} == before  # its settled and its retried rows
    assert await _listed(driver, clock) == ["w2"]  # took fewer than its limit (none): w1 forgotten
    assert await driver.worker_gone() == []


async def test_a_limited_orphan_pass_takes_the_lowest_ids_first_and_a_zero_limit_takes_nothing(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock, lease_seconds=LEASE)
    await _register(driver, clock, "w1")
    await driver.worker_presence_hold(id="w1")
    claims = [await _running(f, "w1") for _ in range(3)]
    low, mid, high = sorted(c.job_id for c in claims)
    await driver.worker_presence_release(id="w1")
    assert await driver.job_rescue_orphaned(workers=["w1"], now=clock.now(), limit=0) == []
    assert await _listed(driver, clock) == ["w1"]  # a pass cut by its limit (0 of 0) keeps the row
    first = await driver.job_rescue_orphaned(workers=["w1"], now=clock.now(), limit=2)
    assert sorted(o.job_id for o in first) == [low, mid]
    assert await _listed(driver, clock) == ["w1"]
    rest = await driver.job_rescue_orphaned(workers=["w1"], now=clock.now(), limit=2)
    assert [(o.job_id, o.state, o.queue, o.worker) for o in rest] == [(high, JobState.READY, "q", "w1")]
    assert await _listed(driver, clock) == []
