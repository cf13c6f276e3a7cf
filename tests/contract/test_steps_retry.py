"""Retry from a step on every driver: a dead or completed job re-runs from a named step, keeping
the earlier steps' stored results; every refusal changes nothing (and another tenant's job is not
found, I25)."""

from __future__ import annotations

from collections import Counter

import pytest

from engine.actions import checked_step_retry
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import X_INVALID_STATE, X_KEY_HELD, X_NOT_FOUND, X_UNKNOWN_STEP, JobsError
from engine.ids import IdFactory
from engine.runtime.steps import StepApi
from engine.types import JobRow, JobState
from tests.contract.test_steps_harness import attempt, claim_api, enqueue, get

STEPS = ("fetch", "transform", "load", "notify")


def pipeline(calls: Counter[str], fail_at: str | None = None):  # type: ignore[no-untyped-def]
    async def handler(step: StepApi, row: JobRow) -> dict[str, object]:
        out: dict[str, object] = {}
        for name in STEPS:

            def work(name: str = name) -> str:
                calls[name] += 1
                if name == fail_at:
                    raise RuntimeError(f"{name} broke")
                return f"{name}#{calls[name]}"

            out[name] = await step.run(name, work)
        return out

    return handler


async def test_retry_from_a_step_reruns_exactly_that_step_and_the_ones_after_it(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock)
    calls: Counter[str] = Counter()
    first = await attempt(driver, clock, pipeline(calls))
    assert first.kind == "completed"
    assert first.result == {"fetch": "fetch#1", "transform": "transform#1", "load": "load#1", "notify": "notify#1"}

    clock.advance(3600)
    res = await driver.job_retry_from_step(
        job_id=jid, step_name="load", tenant=None, now=clock.now(), actor="ann", note="bad load"
    )
    assert (res.outcome, res.state, res.step, res.discarded) == (
        "retried",
        JobState.COMPLETED,
        "load",
        ("load", "notify"),
    )
    row = await get(driver, jid)
    assert (row.state, row.attempt, row.run_at, row.result, row.finished_at) == (
        JobState.READY,
        0,
        clock.now(),
        None,
        None,
    )
    assert [s.name for s in await driver.step_list(job_id=jid)] == ["fetch", "transform"]
    (hist,) = [h for h in await driver.job_history(job_id=jid) if h.kind == "retried-from-step"]
    assert (hist.actor, hist.note, hist.at) == ("ann", "bad load", clock.now())
    assert hist.data == {"step": "load", "from": "completed", "discarded": ["load", "notify"]}

    again = await attempt(driver, clock, pipeline(calls))
    assert again.kind == "completed"
    assert again.result == {"fetch": "fetch#1", "transform": "transform#1", "load": "load#2", "notify": "notify#2"}
    assert calls == Counter({"fetch": 1, "transform": 1, "load": 2, "notify": 2})
    assert [(s.name, s.seq) for s in await driver.step_list(job_id=jid)] == [
        ("fetch", 1),
        ("transform", 2),
        ("load", 3),
        ("notify", 4),
    ]


async def test_a_completed_jobs_attempt_outlives_its_retry_from_a_step(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    # The ack records a completion on the row itself (Postgres writes no attempt row for it), so
    # the retry must write that attempt out before the row leaves 'completed'.
    jid = await enqueue(driver, ids, clock)
    calls: Counter[str] = Counter()
    assert (await attempt(driver, clock, pipeline(calls))).kind == "completed"
    (first,) = await driver.job_attempts(job_id=jid)
    clock.advance(60)
    await driver.job_retry_from_step(job_id=jid, step_name="notify", tenant=None, now=clock.now(), actor="ann")
    assert await driver.job_attempts(job_id=jid) == [first]
    assert (await attempt(driver, clock, pipeline(calls))).kind == "completed"
    runs = [(a.run, a.attempt, a.outcome) for a in await driver.job_attempts(job_id=jid)]
    assert runs == [(first.run, 1, "completed"), (first.run + 1, 1, "completed")]


async def test_retry_from_a_step_revives_a_dead_job_with_its_attempts_reset(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock, max_attempts=1)
    calls: Counter[str] = Counter()
    dead = await attempt(driver, clock, pipeline(calls, fail_at="load"))
    assert dead.kind == "failed" and (await get(driver, jid)).state is JobState.DEAD
    res = await driver.job_retry_from_step(job_id=jid, step_name="transform", tenant=None, now=clock.now(), actor="ops")
    assert (res.outcome, res.state, res.discarded) == ("retried", JobState.DEAD, ("transform", "load"))
    row = await get(driver, jid)
    assert (row.state, row.attempt, row.stop_reason) == (JobState.READY, 0, None)
    done = await attempt(driver, clock, pipeline(calls))
    assert done.kind == "completed" and calls == Counter({"fetch": 1, "transform": 2, "load": 2, "notify": 1})


async def test_retry_from_a_step_refusals_change_nothing(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    jid = await enqueue(driver, ids, clock, tenant="acme", key="order:1")
    calls: Counter[str] = Counter()
    assert (await attempt(driver, clock, pipeline(calls))).kind == "completed"
    before = (await get(driver, jid), await driver.step_list(job_id=jid))

    unknown = await driver.job_retry_from_step(job_id=jid, step_name="lod", tenant="acme", now=clock.now(), actor=None)
    assert (unknown.outcome, unknown.known_steps) == ("unknown-step", STEPS)
    with pytest.raises(JobsError) as err:
        checked_step_retry(unknown, tenant="acme")
    assert (
        err.value.code == X_UNKNOWN_STEP
        and "'lod'" in err.value.cause
        and err.value.fix == f"jobsctl retry {jid} --from-step fetch"
    )

    other_tenant = await driver.job_retry_from_step(
        job_id=jid, step_name="load", tenant="globex", now=clock.now(), actor=None
    )
    assert other_tenant.outcome == "not-found"  # I25: another tenant's job is not found, not refused
    with pytest.raises(JobsError) as err:
        checked_step_retry(other_tenant, tenant="globex")
    assert err.value.code == X_NOT_FOUND and "globex" in err.value.cause

    # A new job holding the same live dedupe key: reviving this one would run the work twice.
    holder = await enqueue(driver, ids, clock, tenant="acme", key="order:1")
    dup = await driver.job_retry_from_step(job_id=jid, step_name="load", tenant="acme", now=clock.now(), actor=None)
    assert (dup.outcome, dup.holder_id) == ("duplicate", holder)
    with pytest.raises(JobsError) as err:
        checked_step_retry(dup, tenant="acme")
    assert err.value.code == X_KEY_HELD and err.value.fix == f"jobsctl why {holder}"
    assert (await get(driver, jid), await driver.step_list(job_id=jid)) == before

    # A job that is not dead or completed (here: running) is refused.
    claimed = await claim_api(driver, clock)
    assert claimed is not None and claimed[1].id == holder
    running = await driver.job_retry_from_step(
        job_id=holder, step_name="load", tenant=None, now=clock.now(), actor=None
    )
    assert (running.outcome, running.state) == ("invalid-state", JobState.RUNNING)
    with pytest.raises(JobsError) as err:
        checked_step_retry(running, tenant=None)
    assert err.value.code == X_INVALID_STATE and "running" in err.value.cause
    missing = await driver.job_retry_from_step(
        job_id=ids.new(), step_name="load", tenant=None, now=clock.now(), actor=None
    )
    assert missing.outcome == "not-found"
    assert not [h for h in await driver.job_history(job_id=jid) if h.kind == "retried-from-step"]
