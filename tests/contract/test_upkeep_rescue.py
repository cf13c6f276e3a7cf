"""The rescuer (job_rescue) at its edges, run against every driver: which rows it takes (running rows
whose lease ended before now, never another state), what it writes on each (due now, lease
cleared, the loss in the row, its attempt and its history; a dead letter finished now on the last
attempt), and when it does nothing (nothing lapsed, a zero limit, a caller that is not the leader
at its term)."""

from __future__ import annotations

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.testing import Factory, make_job
from engine.types import JobState, NewJob

LEASE = 30.0
NAME = "maintenance"


async def _lead(driver: Driver, clock: FakeClock, holder: str = "m", lease: float = 3600.0) -> int:
    term = await driver.leader_acquire(name=NAME, holder=holder, now=clock.now(), lease_seconds=lease)
    assert term is not None
    return term


async def _rescue(
    driver: Driver, clock: FakeClock, term: int, *, holder: str = "m", limit: int = 100
) -> list[tuple[str, JobState]]:
    return await driver.job_rescue(leader=NAME, holder=holder, term=term, now=clock.now(), limit=limit)


async def _running(f: Factory, *, max_attempts: int = 3, worker: str = "w-1") -> str:
    jid = f.ids.new()
    await f.insert(NewJob(jid, "send_email", "q", f"k:{jid}", {"n": 1}, max_attempts))
    await f.claim(jid, worker=worker)
    return jid


async def test_a_lease_ending_exactly_now_is_not_lapsed_and_is_rescued_a_microsecond_later(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock, lease_seconds=LEASE)
    jid = await _running(f)
    term = await _lead(driver, clock)
    clock.advance(LEASE)
    assert await _rescue(driver, clock, term) == []
    assert (await f.get(jid)).state is JobState.RUNNING
    clock.advance(0.000001)
    assert await _rescue(driver, clock, term) == [(jid, JobState.READY)]


async def test_a_rescued_job_is_due_at_once_with_its_lease_cleared_and_its_loss_in_row_attempt_and_history(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock, lease_seconds=LEASE)
    claimed_at = clock.now()
    jid = await _running(f, worker="w-1")
    term = await _lead(driver, clock)
    clock.advance(LEASE + 7)
    assert await _rescue(driver, clock, term) == [(jid, JobState.READY)]
    row = await f.get(jid)
    said = "X_LEASE_LOST: worker w-1 stopped renewing the lease of run 1"
    assert (row.state, row.run_at, row.updated_at, row.lease_until, row.finished_at) == (
        JobState.READY,
        clock.now(),
        clock.now(),
        None,
        None,
    )
    assert (row.attempt, row.run, row.last_error, row.error_code, row.stop_reason) == (
        1,
        1,
        said,
        "X_LEASE_LOST",
        None,
    )
    (att,) = await driver.job_attempts(job_id=jid)
    assert (att.run, att.attempt, att.worker, att.started_at, att.finished_at) == (1, 1, "w-1", claimed_at, clock.now())
    assert (att.outcome, att.error_code, att.error) == ("lost", "X_LEASE_LOST", said)
    (hist,) = await driver.job_history(job_id=jid)
    assert (hist.kind, hist.actor, hist.at) == ("lease_lost", "rescuer", clock.now())
    assert hist.data == {"worker": "w-1", "run": 1, "attempt": 1, "to": "ready"}


async def test_a_rescued_last_attempt_is_a_dead_letter_finished_now_that_keeps_its_due_time(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock, lease_seconds=LEASE)
    due = clock.now()
    jid = await _running(f, max_attempts=1, worker="w-1")
    term = await _lead(driver, clock)
    clock.advance(LEASE + 1)
    assert await _rescue(driver, clock, term) == [(jid, JobState.DEAD)]
    row = await f.get(jid)
    said = "X_LEASE_LOST: worker w-1 stopped renewing the lease of run 1 [stop: attempts-exhausted at attempt 1 of 1]"
    assert (row.state, row.run_at, row.finished_at, row.updated_at, row.lease_until) == (
        JobState.DEAD,
        due,
        clock.now(),
        clock.now(),
        None,
    )
    assert (row.last_error, row.error_code, row.stop_reason) == (said, "X_LEASE_LOST", "attempts-exhausted")
    (att,) = await driver.job_attempts(job_id=jid)
    assert (att.outcome, att.error) == ("lost", said)
    (hist,) = await driver.job_history(job_id=jid)
    assert hist.data == {"worker": "w-1", "run": 1, "attempt": 1, "to": "dead"}


async def test_the_rescuer_takes_running_rows_only_however_long_ago_the_others_were_written(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    long_ago = clock.now()
    others = {
        state: await make_job(driver, ids, long_ago, state=state, queue=f"q-{state.value}")
        for state in (
            JobState.READY,
            JobState.DELAYED,
            JobState.PARKED,
            JobState.SUSPENDED,
            JobState.COMPLETED,
            JobState.DEAD,
            JobState.CANCELLED,
        )
    }
    running = await make_job(driver, ids, long_ago, state=JobState.RUNNING)
    clock.advance(30 * 86400)
    term = await _lead(driver, clock)
    assert await _rescue(driver, clock, term) == [(running.id, JobState.READY)]
    for state, row in others.items():
        assert await driver.job_get(job_id=row.id) == row, state  # not a field changed


async def test_a_pass_with_nothing_lapsed_or_a_zero_limit_rescues_nothing(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    term = await _lead(driver, clock)
    assert await _rescue(driver, clock, term) == []  # no job at all
    f = Factory(driver, ids, clock, lease_seconds=LEASE)
    jid = await _running(f)
    assert await _rescue(driver, clock, term) == []  # its lease still runs
    clock.advance(LEASE + 1)
    assert await _rescue(driver, clock, term, limit=0) == []
    row = await f.get(jid)
    assert (row.state, await driver.job_attempts(job_id=jid), await driver.job_history(job_id=jid)) == (
        JobState.RUNNING,
        [],
        [],
    )


async def test_the_rescuer_does_nothing_for_another_holder_a_stale_term_another_name_or_a_lapsed_lease(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    f = Factory(driver, ids, clock, lease_seconds=LEASE)
    jid = await _running(f)
    term = await _lead(driver, clock, holder="m", lease=LEASE * 2)
    assert await driver.leader_acquire(name="scheduler", holder="s", now=clock.now(), lease_seconds=3600) == term
    clock.advance(LEASE + 1)
    assert await _rescue(driver, clock, term, holder="other") == []
    assert await _rescue(driver, clock, term + 1) == []
    assert await _rescue(driver, clock, term - 1) == []
    # m's term under the name of a lease m does not hold (s holds it, at the same number)
    assert await driver.job_rescue(leader="scheduler", holder="m", term=term, now=clock.now(), limit=10) == []
    clock.advance(LEASE)  # m's lease lapsed, and nobody took it
    assert await _rescue(driver, clock, term) == []
    assert (await f.get(jid)).state is JobState.RUNNING
    assert await driver.job_history(job_id=jid) == []
    assert await _lead(driver, clock) == term  # the same holder back: the same term, fenced again
    assert await _rescue(driver, clock, term) == [(jid, JobState.READY)]
