"""A worker's presence (engine/runtime/presence.py), run against every driver: the running jobs of
a worker whose presence ended are re-delivered by job_rescue_orphaned, recorded as a lost attempt,
and the gone worker's late ack is refused (I15). A worker whose presence holds, or that never
held one, is never judged: its jobs wait for their lease, as before.

What ends a presence differs: on PostgreSQL its session ending (a killed process, a terminated
backend: tests/engine/test_worker_presence_pg.py), or its release; in the memory driver, whose
workers cannot die apart from it, only its release."""

from __future__ import annotations

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.types import Ack, Claim, JobState, NewJob, WorkerRegistration

LEASE = 30.0


async def _register(driver: Driver, wid: str, clock: FakeClock) -> None:
    await driver.worker_register(
        worker=WorkerRegistration(id=wid, host="h", pid=1, queues=("default",), concurrency=4), now=clock.now()
    )


async def _job(driver: Driver, ids: IdFactory, clock: FakeClock, worker: str, max_attempts: int = 3) -> Claim:
    jid = ids.new()
    new = NewJob(jid, "send_email", "default", f"k:{jid}", {"n": 1}, max_attempts)
    await driver.job_enqueue(jobs=[new], now=clock.now())
    (c,) = (
        await driver.worker_claim(queues=["default"], limit=1, worker=worker, now=clock.now(), lease_seconds=LEASE)
    ).jobs
    return c.claim


async def test_a_gone_workers_running_jobs_are_redelivered_and_its_late_ack_refused(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    for wid in ("w1", "w2", "never-held"):
        await _register(driver, wid, clock)
    await driver.worker_presence_hold(id="w1")
    await driver.worker_presence_hold(id="w2")
    await driver.worker_presence_hold(id="w1")  # holding again is a no-op
    lost = await _job(driver, ids, clock, "w1")
    last = await _job(driver, ids, clock, "w1", max_attempts=1)
    kept = await _job(driver, ids, clock, "w2")
    unjudged = await _job(driver, ids, clock, "never-held")
    assert (
        await driver.job_rescue_orphaned(workers=await driver.worker_gone(), now=clock.now(), limit=10) == []
    )  # every presence holds

    await driver.worker_presence_release(id="w1")
    clock.advance(1)
    orphans = await driver.job_rescue_orphaned(workers=await driver.worker_gone(), now=clock.now(), limit=10)
    assert sorted((o.job_id, o.state, o.queue, o.worker) for o in orphans) == sorted(
        [(lost.job_id, JobState.READY, "default", "w1"), (last.job_id, JobState.DEAD, "default", "w1")]
    )
    assert (
        await driver.job_rescue_orphaned(workers=await driver.worker_gone(), now=clock.now(), limit=10) == []
    )  # each once
    assert [w.id for w in await driver.worker_list(now=clock.now())] == ["never-held", "w2"]  # w1's row went
    row = await driver.job_get(job_id=lost.job_id)
    assert row is not None and (row.state, row.attempt, row.error_code, row.run_at) == (
        JobState.READY,
        1,
        "X_LEASE_LOST",
        clock.now(),
    )
    assert "worker w1 is gone" in (row.last_error or "")
    dead = await driver.job_get(job_id=last.job_id)
    assert dead is not None and (dead.state, dead.stop_reason) == (JobState.DEAD, "attempts-exhausted")
    (att,) = await driver.job_attempts(job_id=lost.job_id)
    assert (att.outcome, att.worker, att.run, att.error_code) == ("lost", "w1", 1, "X_LEASE_LOST")
    (hist,) = await driver.job_history(job_id=lost.job_id)
    assert (hist.kind, hist.actor, hist.data["why"], hist.data["worker"]) == (
        "lease_lost",
        "rescuer",
        "worker-gone",
        "w1",
    )
    # I15: the gone worker's ack lands nowhere, before and after another claim bumps the run.
    assert await driver.job_ack_many(acks=[Ack(lost, None)], now=clock.now()) == []
    (again,) = (
        await driver.worker_claim(queues=["default"], limit=1, worker="w2", now=clock.now(), lease_seconds=LEASE)
    ).jobs
    assert (again.claim.job_id, again.claim.run) == (lost.job_id, 2)
    assert await driver.job_ack_many(acks=[Ack(lost, None)], now=clock.now()) == []
    assert await driver.job_ack_many(acks=[Ack(again.claim, None)], now=clock.now()) == [lost.job_id]
    for held in (kept, unjudged):  # a presence that holds, or none ever held: the lease decides
        row = await driver.job_get(job_id=held.job_id)
        assert row is not None and row.state is JobState.RUNNING


async def test_a_deregistered_worker_is_not_judged_by_its_presence(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    await _register(driver, "w1", clock)
    await driver.worker_presence_hold(id="w1")
    claim = await _job(driver, ids, clock, "w1")
    await driver.worker_deregister(id="w1")
    await driver.worker_presence_release(id="w1")
    assert await driver.job_rescue_orphaned(workers=await driver.worker_gone(), now=clock.now(), limit=10) == []
    row = await driver.job_get(job_id=claim.job_id)
    assert row is not None and row.state is JobState.RUNNING  # its lease decides


async def test_a_pass_cut_by_its_limit_keeps_the_gone_workers_row_for_the_next(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    await _register(driver, "w1", clock)
    await driver.worker_presence_hold(id="w1")
    claims = [await _job(driver, ids, clock, "w1") for _ in range(3)]
    await driver.worker_presence_release(id="w1")
    first = await driver.job_rescue_orphaned(workers=await driver.worker_gone(), now=clock.now(), limit=2)
    assert len(first) == 2 and [w.id for w in await driver.worker_list(now=clock.now())] == ["w1"]
    rest = await driver.job_rescue_orphaned(workers=await driver.worker_gone(), now=clock.now(), limit=2)
    assert sorted(o.job_id for o in first + rest) == sorted(c.job_id for c in claims)
    assert await driver.worker_list(now=clock.now()) == []


async def test_the_orphan_rescue_takes_only_the_named_workers_that_are_still_gone(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    for wid in ("w1", "w2", "w3"):
        await _register(driver, wid, clock)
        await driver.worker_presence_hold(id=wid)
    one = await _job(driver, ids, clock, "w1")
    two = await _job(driver, ids, clock, "w2")
    await _job(driver, ids, clock, "w3")
    await driver.worker_presence_release(id="w1")
    await driver.worker_presence_release(id="w2")
    assert await driver.worker_gone() == ["w1", "w2"]
    # w3 holds its presence: named, it is still not judged; w2 gone but not named waits its turn
    orphans = await driver.job_rescue_orphaned(workers=["w1", "w3"], now=clock.now(), limit=10)
    assert [o.job_id for o in orphans] == [one.job_id]
    orphans = await driver.job_rescue_orphaned(workers=["w2"], now=clock.now(), limit=10)
    assert [o.job_id for o in orphans] == [two.job_id]
    assert await driver.worker_gone() == []
