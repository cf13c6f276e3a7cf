"""A step's wait for other jobs (fan-in, engine/runtime/fanin.py), on every driver: the run is
suspended (I7: no attempt burned, no error) until each job it names has settled, answers their
outcomes in the order given (a dead or cancelled job is an outcome), looks at them on a schedule
that grows with the wait, and refuses what it cannot wait for before it writes anything."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, X_WAITED_JOB_GONE, JobsError
from engine.ids import IdFactory
from engine.introspect import Introspector
from engine.introspect.why import suspended_cause
from engine.introspect.why_queue import wait_cause
from engine.retry import declared_error_retry
from engine.runtime.fanin import MAX_JOBS, POLL_FIRST
from engine.runtime.steps import StepApi
from engine.types import Ack, JobRow, JobState, Nack, NewJob
from tests.contract.test_steps_harness import QUEUE, attempt, enqueue, get

KIDS = "fanin-kids"


async def children(driver: Driver, ids: IdFactory, clock: FakeClock, n: int) -> list[str]:
    out = [ids.new() for _ in range(n)]
    await driver.job_enqueue(
        jobs=[
            NewJob(id=jid, name="resize", queue=KIDS, idempotency_key=f"img:{jid}", input={}, max_attempts=3)
            for jid in out
        ],
        now=clock.now(),
    )
    return out


async def settle(driver: Driver, clock: FakeClock, how: dict[str, Any]) -> None:
    """Claim the children's queue and settle each claimed job named in ``how``: a result to
    complete it with, or ``("dead", code)``; the others stay running."""
    got = await driver.worker_claim(queues=[KIDS], limit=100, worker="kid-w", now=clock.now(), lease_seconds=60)
    for c in got.jobs:
        if c.row.id not in how:
            continue
        outcome = how[c.row.id]
        if isinstance(outcome, tuple):
            nack = Nack(
                c.claim,
                "dead",
                run_at=clock.now(),
                error=f"{outcome[1]}: no",
                error_code=outcome[1],
                stop_reason="terminal",
            )
            assert await driver.job_nack(nack=nack, now=clock.now())
        else:
            assert await driver.job_ack_many(acks=[Ack(c.claim, outcome)], now=clock.now()) == [c.row.id]


def waiting_on(kids: list[str], **kw: Any) -> Any:
    async def handler(step: StepApi, row: JobRow) -> Any:
        got = await step.run("fan-out", lambda: kids)
        return await step.wait_for_jobs("fan-in", got, **kw)

    return handler


async def test_i7_a_wait_for_jobs_is_suspended_until_each_has_settled_and_answers_their_outcomes_in_order(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    parent = await enqueue(driver, ids, clock)
    kids = await children(driver, ids, clock, 3)
    handler = waiting_on(kids)

    out = await attempt(driver, clock, handler)
    assert out.kind == "suspended" and out.suspension is not None
    wait = {"kind": "jobs", "step": "fan-in", "jobs": kids, "timeout_at": None}
    assert out.suspension.wait == wait
    assert out.suspension.run_at == clock.now() + timedelta(seconds=POLL_FIRST)
    row = await get(driver, parent)
    assert (row.state, row.attempt, row.last_error, row.wait) == (JobState.SUSPENDED, 0, None, wait)

    await settle(driver, clock, {kids[0]: {"w": 640}, kids[1]: ("dead", "X_IMAGE_BROKEN")})  # kids[2] runs on
    clock.advance(POLL_FIRST)
    again = await attempt(driver, clock, handler)
    assert again.kind == "suspended"  # one of three is still running
    assert (await get(driver, kids[2])).state is JobState.RUNNING

    assert await driver.job_cancel(job_id=kids[2], tenant=None, now=clock.now(), actor="ann") is not None
    clock.advance(POLL_FIRST)
    done = await attempt(driver, clock, handler)
    assert done.kind == "completed"
    assert [(o["id"], o["state"], o["result"], o["error_code"], o["stop_reason"]) for o in done.result] == [
        (kids[0], "completed", {"w": 640}, None, None),
        (kids[1], "dead", None, "X_IMAGE_BROKEN", "terminal"),
        (kids[2], "cancelled", None, None, None),
    ]
    assert done.result[1]["error"] == "X_IMAGE_BROKEN: no" and done.result[0]["error"] is None
    assert {o["name"] for o in done.result} == {"resize"}
    row = await get(driver, parent)
    assert (row.state, row.attempt, row.result) == (JobState.COMPLETED, 1, done.result)  # no attempt burned
    steps = [(s.name, s.kind, s.status) for s in await driver.step_list(job_id=parent)]
    assert steps == [("fan-out", "run", "completed"), ("fan-in", "jobs", "completed")]
    # once it went on, its detail still lists the jobs its wait named, as they stand now
    detail = await Introspector(Engine(driver, clock=clock, ids=ids)).job(parent)
    assert [(a.id, a.state) for a in detail.awaited] == [
        (kids[0], JobState.COMPLETED),
        (kids[1], JobState.DEAD),
        (kids[2], JobState.CANCELLED),
    ]


async def test_a_fail_fast_wait_goes_on_at_the_first_job_that_died_with_each_outcome_as_it_stands(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    parent = await enqueue(driver, ids, clock)
    kids = await children(driver, ids, clock, 3)
    handler = waiting_on(kids, fail_fast=True)
    out = await attempt(driver, clock, handler)
    assert out.kind == "suspended" and out.suspension is not None
    assert out.suspension.wait == {
        "kind": "jobs",
        "step": "fan-in",
        "jobs": kids,
        "fail_fast": True,
        "timeout_at": None,
    }
    intro = Introspector(Engine(driver, clock=clock, ids=ids))
    (said,) = [c for c in (await intro.why_job(parent)).causes if c.kind == "jobs"]
    assert "goes on once each has completed, or at the first that dies or is cancelled (fail_fast)" in said.text

    await settle(driver, clock, {kids[0]: {"w": 1}})  # completed; kids[1] and kids[2] run on
    clock.advance(POLL_FIRST)
    assert (await attempt(driver, clock, handler)).kind == "suspended"  # a completion is no failure

    assert await driver.job_cancel(job_id=kids[1], tenant=None, now=clock.now(), actor="ann") is not None
    clock.advance(POLL_FIRST)
    done = await attempt(driver, clock, handler)
    assert done.kind == "completed"
    assert [(o["id"], o["state"], o["result"]) for o in done.result] == [
        (kids[0], "completed", {"w": 1}),
        (kids[1], "cancelled", None),
        (kids[2], "running", None),  # as it stood at that look: the wait did not wait for it
    ]
    assert (await get(driver, kids[2])).state is JobState.RUNNING
    assert (await get(driver, parent)).result == done.result


async def test_a_wait_for_jobs_refuses_a_fail_fast_that_is_not_a_bool(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    parent = await enqueue(driver, ids, clock)
    kids = await children(driver, ids, clock, 1)
    out = await attempt(driver, clock, waiting_on(kids, fail_fast="yes"))
    assert out.kind == "failed" and isinstance(out.error, JobsError)
    assert out.error.code == X_INVALID_ARGUMENT and "fail_fast='yes' must be True or False" in out.error.cause
    assert [s.name for s in await driver.step_list(job_id=parent)] == ["fan-out"]  # the wait wrote nothing


async def test_the_wait_looks_again_after_a_tenth_of_the_time_waited_and_at_most_its_event_poll_apart(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    await enqueue(driver, ids, clock)
    kids = await children(driver, ids, clock, 1)
    handler = waiting_on(kids, timeout=1000)
    start = clock.now()
    looks = []
    for waited in (0, 2, 60, 200, 900, 990):  # seconds after the wait was first reached
        clock.set(start + timedelta(seconds=waited))
        out = await attempt(driver, clock, handler, event_poll=30.0)
        assert out.kind == "suspended" and out.suspension is not None
        looks.append((out.suspension.run_at - clock.now()).total_seconds())
    # half a second; then a tenth of the wait so far (at least half a second); at most event_poll;
    # and never past the timeout
    assert looks == [POLL_FIRST, POLL_FIRST, 6.0, 20.0, 30.0, 10.0]


async def test_a_wait_for_jobs_past_its_timeout_answers_none_and_leaves_the_jobs_as_they_were(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    parent = await enqueue(driver, ids, clock)
    kids = await children(driver, ids, clock, 2)

    async def handler(step: StepApi, row: JobRow) -> Any:
        got = await step.wait_for_jobs("fan-in", kids, timeout=5)
        return {"got": got}

    assert (await attempt(driver, clock, handler)).kind == "suspended"
    clock.advance(5)
    done = await attempt(driver, clock, handler)
    assert done.kind == "completed" and done.result == {"got": None}
    assert [(s.name, s.status) for s in await driver.step_list(job_id=parent)] == [("fan-in", "timed-out")]
    assert {(await get(driver, k)).state for k in kids} == {JobState.READY}


@pytest.mark.parametrize(
    ("ids_given", "timeout", "says"),
    [
        ("0190f1a2-0000-7000-8000-000000000001", None, "takes a list of job ids, not str"),
        ([], None, "takes 1 to 1,000 job ids, not 0"),
        (["x"] * (MAX_JOBS + 1), None, "not 1,001"),
        (["not-an-id"], None, "'not-an-id' is not a job id"),
        ([7], None, "7 is not a job id"),
        ("own", None, "would wait for itself"),
        ("kid", 0, "timeout=0 must be a positive number of seconds"),
        ("kid", float("inf"), "timeout=inf must be a positive number of seconds"),
    ],
)
async def test_a_wait_for_jobs_refuses_what_it_cannot_wait_for_before_it_writes_anything(
    driver: Driver, ids: IdFactory, clock: FakeClock, ids_given: Any, timeout: Any, says: str
) -> None:
    parent = await enqueue(driver, ids, clock)
    (kid,) = await children(driver, ids, clock, 1)
    given = {"own": [parent], "kid": [kid]}.get(ids_given, ids_given) if isinstance(ids_given, str) else ids_given

    async def handler(step: StepApi, row: JobRow) -> Any:
        return await step.wait_for_jobs("fan-in", given, timeout=timeout)

    out = await attempt(driver, clock, handler)
    assert out.kind == "failed" and isinstance(out.error, JobsError)
    assert out.error.code == X_INVALID_ARGUMENT and says in out.error.cause and out.error.fix
    assert await driver.step_list(job_id=parent) == []


async def test_a_waited_job_that_names_no_job_or_is_discarded_meanwhile_is_x_waited_job_gone_and_terminal(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    assert declared_error_retry(X_WAITED_JOB_GONE) == "terminal"  # every retry would find it gone again
    parent = await enqueue(driver, ids, clock, max_attempts=1)
    nobody = ids.new()

    out = await attempt(driver, clock, waiting_on([nobody]))
    assert out.kind == "failed" and isinstance(out.error, JobsError) and out.error.code == X_WAITED_JOB_GONE
    assert f"waits for job {nobody}, which names no job" in out.error.cause
    assert [(s.name, s.status) for s in await driver.step_list(job_id=parent)] == [("fan-out", "completed")]

    assert (await get(driver, parent)).state is JobState.DEAD
    other = await enqueue(driver, ids, clock, name="other", max_attempts=1)
    kids = await children(driver, ids, clock, 2)
    handler = waiting_on(kids)
    assert (await attempt(driver, clock, handler)).kind == "suspended"
    await settle(driver, clock, {kids[0]: ("dead", "X_IMAGE_BROKEN")})
    discarded = await driver.job_discard(job_id=kids[0], tenant=None, now=clock.now(), actor="ann")
    assert discarded is not None and discarded.changed
    other_detail = await Introspector(Engine(driver, clock=clock, ids=ids)).job(other)
    assert [(a.id, a.state) for a in other_detail.awaited] == [(kids[1], JobState.RUNNING)]  # the gone one left out
    assert "(1 running, 1 gone)" in other_detail.why.summary
    clock.advance(POLL_FIRST)
    gone = await attempt(driver, clock, handler)
    assert gone.kind == "failed" and isinstance(gone.error, JobsError) and gone.error.code == X_WAITED_JOB_GONE
    assert f"waits for job {kids[0]}, which names a job that is gone" in gone.error.cause
    assert (await get(driver, other)).state is JobState.DEAD


async def test_why_says_a_fan_in_waits_for_its_jobs_and_when_it_looks_again(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    parent = await enqueue(driver, ids, clock)
    kids = await children(driver, ids, clock, 3)
    assert (await attempt(driver, clock, waiting_on(kids, timeout=3600))).kind == "suspended"
    row = await get(driver, parent)

    cause = suspended_cause(row, clock.now())
    assert (cause.kind, cause.count, cause.next_check) == ("jobs", 3, row.run_at)
    assert cause.until == clock.now() + timedelta(seconds=3600)
    assert cause.text.startswith("Waiting for 3 jobs to settle, in step 'fan-in': it looks at them again in ")
    assert "the wait times out at" in cause.text

    await settle(driver, clock, {kids[0]: {"w": 1}})  # one completes; the settle's claim leaves two running
    intro = Introspector(Engine(driver, clock=clock, ids=ids))
    (said,) = [c for c in (await intro.why_job(parent)).causes if c.kind == "jobs"]
    assert said.kind == "jobs" and "in step 'fan-in' (1 completed, 2 running): it looks" in said.text
    detail = await intro.job(parent)
    assert [(a.id, a.name, a.state) for a in detail.awaited] == [
        (kids[0], "resize", JobState.COMPLETED),
        (kids[1], "resize", JobState.RUNNING),
        (kids[2], "resize", JobState.RUNNING),
    ]  # in the order the wait named them
    assert "(1 completed, 2 running)" in detail.why.summary
    assert (await intro.job(kids[0])).awaited == ()  # a job that waits for none

    (group,) = [g for g in await driver.queue_waits(queue=QUEUE, now=clock.now(), budget_ms=None)]
    assert (group.state, group.kind, group.key, group.count) == (JobState.SUSPENDED, "jobs", None, 1)
    said = wait_cause(QUEUE, group, clock.now())
    assert said.kind == "jobs" and "1 job of steps is waiting in a step for other jobs to settle" in said.text


async def test_a_waited_job_names_the_fan_ins_that_wait_for_it_until_they_go_on(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    parent = await enqueue(driver, ids, clock)
    kids = await children(driver, ids, clock, 2)
    stranger = (await children(driver, ids, clock, 1))[0]
    handler = waiting_on(kids)
    assert (await attempt(driver, clock, handler)).kind == "suspended"

    assert [r.id for r in await driver.job_awaited_by(job_id=kids[1])] == [parent]
    assert await driver.job_awaited_by(job_id=stranger) == []
    intro = Introspector(Engine(driver, clock=clock, ids=ids))
    (said,) = [c for c in (await intro.why_job(kids[1])).causes if c.kind == "awaited"]
    assert (said.job_id, said.state, said.count) == (parent, JobState.SUSPENDED, 2)
    assert said.text == (
        f"Job {parent} (provision) waits for this job in step 'fan-in', one of 2: it goes on once each has completed, "
        "died or been cancelled."
    )
    assert [c.kind for c in (await intro.why_job(stranger)).causes if c.kind == "awaited"] == []

    got = await driver.worker_claim(queues=[KIDS], limit=10, worker="kid-w", now=clock.now(), lease_seconds=60)
    running = await intro.why_job(kids[1])  # a running job names its fan-in too
    assert running.state is JobState.RUNNING and [c.job_id for c in running.causes if c.kind == "awaited"] == [parent]
    acks = [Ack(c.claim, {"ok": 1}) for c in got.jobs if c.row.id in kids]
    assert len(await driver.job_ack_many(acks=acks, now=clock.now())) == 2
    clock.advance(POLL_FIRST)
    assert (await attempt(driver, clock, handler)).kind == "completed"
    assert await driver.job_awaited_by(job_id=kids[1]) == []  # it went on: nobody waits any more
