"""A step that enqueues jobs (``ctx.step.enqueue``, engine/runtime/fanout.py), on every driver:
the jobs and the step storing their ids are one commit fenced on the claim, so a replay
enqueues nothing, a run that lost its claim leaves neither, and what cannot be enqueued is
refused before anything is written."""

from __future__ import annotations

from typing import Any

import pytest

from engine.api import Engine, Enqueue
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import X_ABORTED, X_INPUT_NOT_JSON, X_INVALID_ARGUMENT, X_NOT_A_JOB, JobsError
from engine.ids import IdFactory
from engine.jobs import job
from engine.records import EnqueuedBy
from engine.runtime.fanout import MAX_JOBS
from engine.runtime.steps import StepApi
from engine.types import JobRow, JobState, NewJob
from tests.contract.test_steps_harness import attempt, claim_api, enqueue, get


@job(name="fo.thumb", queue="fanout-kids", idempotency_key=lambda inp: f"thumb:{inp['n']}")
async def thumb(ctx, inp):  # type: ignore[no-untyped-def]
    return inp


@pytest.fixture
def eng(driver: Driver, clock: FakeClock, ids: IdFactory) -> Engine:
    return Engine(driver, clock=clock, ids=ids)


def fan_out(*ns: int, then: Any = None) -> Any:
    async def handler(step: StepApi, row: JobRow) -> Any:
        got = await step.enqueue("fan-out", [Enqueue(thumb, {"n": n}) for n in ns])
        if then is not None:
            then(got)
        return got

    return handler


async def live_keys(driver: Driver, clock: FakeClock, ids: IdFactory, *ns: int) -> list[bool]:
    """Whether a live job holds each thumb's key: enqueue it again and read ``deduped``."""
    out = await driver.job_enqueue(
        jobs=[
            NewJob(
                id=ids.new(),
                name="fo.thumb",
                queue="fanout-kids",
                idempotency_key=f"thumb:{n}",
                input={"n": n},
                max_attempts=3,
            )
            for n in ns
        ],
        now=clock.now(),
    )
    return [r.deduped for r in out]


async def test_a_step_enqueue_writes_its_jobs_and_their_ids_in_one_step_and_a_replay_enqueues_nothing(
    driver: Driver, ids: IdFactory, clock: FakeClock, eng: Engine
) -> None:
    parent = await enqueue(driver, ids, clock, max_attempts=2)
    seen: list[list[str]] = []

    def fail_once(got: list[str]) -> None:
        seen.append(got)
        if len(seen) == 1:
            raise RuntimeError("the run fails after its fan-out")

    first = await attempt(driver, clock, fan_out(1, 2, 3, then=fail_once), engine=eng)
    assert first.kind == "failed"
    (step,) = await driver.step_load(job_id=parent)
    assert (step.kind, step.status, step.result) == ("enqueue", "completed", seen[0])
    kids = {r.id: r for r in await driver.job_get_many(job_ids=seen[0])}
    assert [(kids[i].name, kids[i].input, kids[i].state) for i in seen[0]] == [
        ("fo.thumb", {"n": n}, JobState.READY) for n in (1, 2, 3)
    ]

    second = await attempt(driver, clock, fan_out(1, 2, 3, then=fail_once), engine=eng)
    assert second.kind == "completed" and second.result == seen[0] == seen[1]
    assert (await get(driver, parent)).state is JobState.COMPLETED
    assert len(await driver.job_get_many(job_ids=seen[0])) == 3
    assert await live_keys(driver, clock, ids, 1, 2, 3) == [True, True, True]


async def test_i2_a_step_enqueue_answers_the_live_job_holding_a_key_and_one_id_for_a_key_given_twice(
    driver: Driver, ids: IdFactory, clock: FakeClock, eng: Engine
) -> None:
    (held,) = await driver.job_enqueue(
        jobs=[
            NewJob(
                id=ids.new(),
                name="fo.thumb",
                queue="fanout-kids",
                idempotency_key="thumb:7",
                input={"n": 7},
                max_attempts=3,
            )
        ],
        now=clock.now(),
    )
    parent = await enqueue(driver, ids, clock)
    out = await attempt(driver, clock, fan_out(7, 8, 8), engine=eng)
    assert out.kind == "completed"
    assert out.result[0] == held.id and out.result[1] == out.result[2] != held.id
    (step,) = await driver.step_load(job_id=parent)
    assert step.result == out.result


async def test_a_step_enqueue_by_a_run_that_lost_its_claim_writes_neither_its_jobs_nor_its_step(
    driver: Driver, ids: IdFactory, clock: FakeClock, eng: Engine
) -> None:
    parent = await enqueue(driver, ids, clock)
    claimed = await claim_api(driver, clock, engine=eng)
    assert claimed is not None
    api, _ = claimed
    assert await driver.job_cancel(job_id=parent, tenant=None, now=clock.now(), actor="ann") is not None
    with pytest.raises(JobsError) as exc:
        await api.enqueue("fan-out", [Enqueue(thumb, {"n": n}) for n in (4, 5)])
    assert exc.value.code == X_ABORTED and "no longer holds the job" in exc.value.cause
    assert await driver.step_load(job_id=parent) == []
    assert await live_keys(driver, clock, ids, 4, 5) == [False, False]


@pytest.mark.parametrize(
    ("jobs", "code", "says"),
    [
        ("thumbs", X_INVALID_ARGUMENT, "is not a list of Enqueue"),
        ({"n": 1}, X_INVALID_ARGUMENT, "is not a list of Enqueue"),
        (7, X_INVALID_ARGUMENT, "is not a list of Enqueue"),
        ([], X_INVALID_ARGUMENT, "enqueues 0 jobs"),
        ([Enqueue(thumb, {"n": n}) for n in range(MAX_JOBS + 1)], X_INVALID_ARGUMENT, "enqueues 1001 jobs"),
        ([Enqueue(thumb, {"n": 1}), {"n": 2}], X_INVALID_ARGUMENT, "not an Enqueue"),
        ([Enqueue(thumb, {"n": 1}), Enqueue(print, {"n": 2})], X_NOT_A_JOB, "is not a job handle"),  # type: ignore[arg-type]
        ([Enqueue(thumb, {"n": 1}), Enqueue(thumb, {"n": {1, 2}})], X_INPUT_NOT_JSON, ""),
        ([Enqueue(thumb, {"n": 1}, delay=-1)], X_INVALID_ARGUMENT, "delay=-1"),
    ],
)
async def test_a_step_enqueue_refuses_what_it_cannot_enqueue_before_it_writes_anything(
    driver: Driver, ids: IdFactory, clock: FakeClock, eng: Engine, jobs: Any, code: str, says: str
) -> None:
    parent = await enqueue(driver, ids, clock)
    claimed = await claim_api(driver, clock, engine=eng)
    assert claimed is not None
    with pytest.raises(JobsError) as exc:
        await claimed[0].enqueue("fan-out", jobs)
    assert exc.value.code == code and says in exc.value.cause
    assert exc.value.fix
    assert await driver.step_load(job_id=parent) == []
    assert await live_keys(driver, clock, ids, 1) == [False]


async def test_a_step_enqueue_on_a_worker_without_an_engine_says_how_to_get_one(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    parent = await enqueue(driver, ids, clock)
    claimed = await claim_api(driver, clock)
    assert claimed is not None
    with pytest.raises(JobsError) as exc:
        await claimed[0].enqueue("fan-out", [Enqueue(thumb, {"n": 1})])
    assert exc.value.code == X_INVALID_ARGUMENT and "ctx.step.enqueue('fan-out')" in exc.value.cause
    assert "eng.worker" in exc.value.fix
    assert await driver.step_load(job_id=parent) == []


async def test_a_job_a_step_enqueued_names_its_parent_and_that_step_and_one_enqueued_otherwise_none(
    driver: Driver, ids: IdFactory, clock: FakeClock, eng: Engine
) -> None:
    first = await enqueue(driver, ids, clock)
    one = await attempt(driver, clock, fan_out(1, 2), engine=eng)
    second = await enqueue(driver, ids, clock)
    two = await attempt(driver, clock, fan_out(2, 3), engine=eng)  # thumb 2 is live: it answers first's job
    assert one.result[1] == two.result[0]
    by = {k: await driver.step_enqueued_by(job_id=k) for k in {*one.result, *two.result}}
    assert by[one.result[0]] == [EnqueuedBy(first, "fan-out")]
    assert by[one.result[1]] == sorted(
        [EnqueuedBy(first, "fan-out"), EnqueuedBy(second, "fan-out")], key=lambda e: e.job_id
    )
    assert by[two.result[1]] == [EnqueuedBy(second, "fan-out")]
    assert await driver.step_enqueued_by(job_id=first) == []  # enqueued by no step
