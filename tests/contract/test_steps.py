"""Durable steps on every driver: memoized replay (I9), fenced writes (I10), step_timeout (I11),
unique step names, and the per-step trace."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta

import pytest

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import X_ABORTED, X_DUPLICATE_STEP, X_INPUT_NOT_JSON, X_INVALID_ARGUMENT, X_STEP_TIMEOUT, JobsError
from engine.ids import IdFactory
from engine.records import StepRecord
from engine.retry import declared_error_retry
from engine.runtime.signal import RunSignal
from engine.runtime.steps import StepApi
from engine.types import JobRow, JobState, Nack, StoredStep
from tests.contract.test_steps_harness import attempt, claim_api, enqueue, get


class Flaky(Exception):
    pass


async def test_i9_third_step_fails_twice_then_succeeds_and_steps_one_and_two_run_once(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock, max_attempts=3)
    calls: Counter[str] = Counter()

    def one() -> dict[str, int]:
        calls["one"] += 1
        return {"workspace": 42}

    async def two() -> list[int]:
        calls["two"] += 1
        return [1, 2, 3]

    def three() -> str:
        calls["three"] += 1
        if calls["three"] < 3:
            raise Flaky(f"try {calls['three']}")
        return "done"

    async def handler(step: StepApi, row: JobRow) -> dict[str, object]:
        ws = await step.run("one", one)
        nums = await step.run("two", two)
        last = await step.run("three", three)
        return {"ws": ws["workspace"], "nums": nums, "last": last}

    first = await attempt(driver, clock, handler)
    assert first.kind == "failed" and isinstance(first.error, Flaky)
    trace = {s.name: s for s in await driver.step_list(job_id=jid)}
    assert (trace["three"].status, trace["three"].error, trace["three"].attempt) == ("failed", "Flaky: try 1", 1)
    assert trace["one"].status == trace["two"].status == "completed"
    assert (await get(driver, jid)).attempt == 1  # the step's failure was the attempt's failure

    second = await attempt(driver, clock, handler)
    assert second.kind == "failed"
    third = await attempt(driver, clock, handler)
    assert third.kind == "completed"
    assert third.result == {"ws": 42, "nums": [1, 2, 3], "last": "done"}
    assert calls == Counter({"one": 1, "two": 1, "three": 3})
    trace = {s.name: s for s in await driver.step_list(job_id=jid)}
    assert [(s.name, s.seq, s.status) for s in trace.values()] == [
        ("one", 1, "completed"),
        ("two", 2, "completed"),
        ("three", 3, "completed"),
    ]
    assert (trace["one"].attempt, trace["three"].attempt, trace["three"].error) == (1, 3, None)
    row = await get(driver, jid)
    assert row.state is JobState.COMPLETED and row.attempt == 3


async def test_i9_a_steps_result_is_stored_before_the_step_returns(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock)
    seen: list[object] = []

    async def handler(step: StepApi, row: JobRow) -> None:
        await step.run("charge", lambda: {"charge": "ch_1", "amount": 12.5})
        # Nothing else has happened yet: the result is already in the store, as a replay reads it.
        stored = {s.name: s for s in await driver.step_load(job_id=jid)}
        seen.append((stored["charge"].status, stored["charge"].result))
        raise Flaky("the process dies here")

    await attempt(driver, clock, handler)
    assert seen == [("completed", {"charge": "ch_1", "amount": 12.5})]
    replayed = await attempt(driver, clock, lambda step, row: step.run("charge", _never))
    assert replayed.kind == "completed" and replayed.result == {"charge": "ch_1", "amount": 12.5}


def _never() -> None:
    raise AssertionError("a completed step ran again on replay")


async def test_duplicate_step_names_in_one_run_are_refused(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    jid = await enqueue(driver, ids, clock)
    claimed = await claim_api(driver, clock)
    assert claimed is not None
    step, _ = claimed
    assert await step.run("fetch", lambda: 1) == 1
    with pytest.raises(JobsError) as err:
        await step.run("fetch", lambda: 2)
    assert err.value.code == X_DUPLICATE_STEP and "'fetch'" in err.value.cause
    with pytest.raises(JobsError) as err:
        await step.sleep("fetch", 10)
    assert err.value.code == X_DUPLICATE_STEP
    # The first result is untouched, and a duplicate is a bug every retry would hit: terminal.
    assert [(s.name, s.result) for s in await driver.step_load(job_id=jid)] == [("fetch", 1)]
    assert declared_error_retry(X_DUPLICATE_STEP) == "terminal"


async def test_a_step_name_recorded_as_another_kind_is_refused_on_replay(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    await enqueue(driver, ids, clock)
    out = await attempt(driver, clock, lambda step, row: step.sleep("pause", 60))
    assert out.kind == "suspended"
    clock.advance(60)
    again = await attempt(driver, clock, lambda step, row: step.run("pause", lambda: 1))
    assert again.kind == "failed" and getattr(again.error, "code", None) == X_DUPLICATE_STEP


async def test_bad_step_arguments_are_refused_and_write_nothing(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock)
    claimed = await claim_api(driver, clock)
    assert claimed is not None
    step, _ = claimed
    for call in (
        lambda: step.run("", lambda: 1),
        lambda: step.run("x", 42),  # type: ignore[arg-type]
        lambda: step.sleep("nap", -1),
        lambda: step.sleep("nap2", float("inf")),
        lambda: step.sleep_until("nap3", clock.now().replace(tzinfo=None)),
        lambda: step.wait_for_event("w", event=""),
        lambda: step.wait_for_event("w2", event="e", match=["not", "a", "dict"]),  # type: ignore[arg-type]
        lambda: step.wait_for_event("w3", event="e", timeout=0),
        lambda: step.sleep("nap4", 1e12),  # finite, but past the last year a datetime holds
        lambda: step.wait_for_event("w4", event="e", timeout=1e15),
    ):
        with pytest.raises(JobsError) as err:
            await call()
        assert err.value.code == X_INVALID_ARGUMENT and err.value.fix
    with pytest.raises(JobsError) as err:
        await step.run("not-json", lambda: {1, 2})
    assert err.value.code == X_INPUT_NOT_JSON
    (failed,) = await driver.step_list(job_id=jid)
    assert (
        (failed.name, failed.status) == ("not-json", "failed")
        and failed.error
        and failed.error.startswith(X_INPUT_NOT_JSON)
    )


# --- I10: after the run is stopped, every step write is refused ---------------------------------


async def test_i10_a_cancelled_jobs_late_step_write_is_refused(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock)
    claimed = await claim_api(driver, clock)
    assert claimed is not None
    step, _ = claimed
    await step.run("before", lambda: "kept")
    # An operator cancels while the body runs. Even before the runner aborts the signal, the
    # driver's fence (state running, claimed_by + run) refuses the late write.
    assert (await driver.job_cancel(job_id=jid, tenant=None, now=clock.now(), actor="ops")).cancelled  # type: ignore[union-attr]
    with pytest.raises(JobsError) as err:
        await step.run("late", lambda: "lost")
    assert err.value.code == X_ABORTED
    assert [s.name for s in await driver.step_load(job_id=jid)] == ["before"]
    # Once the signal is aborted nothing even starts.
    ran: list[str] = []
    step.signal.abort("cancelled")
    with pytest.raises(JobsError) as err:
        await step.run("later", lambda: ran.append("x"))
    assert err.value.code == X_ABORTED and ran == []
    with pytest.raises(JobsError) as err:
        await step.sleep("nap", 60)
    assert err.value.code == X_ABORTED
    assert [s.name for s in await driver.step_load(job_id=jid)] == ["before"]


async def test_i10_an_abort_during_a_step_cancels_it_and_writes_nothing(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock)
    signal = RunSignal()
    claimed = await claim_api(driver, clock, signal=signal)
    assert claimed is not None
    step, _ = claimed
    started, stopped = asyncio.Event(), asyncio.Event()

    async def slow() -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()
        return "never"

    task = asyncio.create_task(step.run("slow", slow))
    await started.wait()
    signal.abort("timeout")
    with pytest.raises(JobsError) as err:
        await task
    assert err.value.code == X_ABORTED and "timeout" in err.value.cause
    await stopped.wait()  # the step's task was cancelled, not left running
    assert await driver.step_load(job_id=jid) == []


async def test_i10_a_stale_run_cannot_write_after_the_job_was_redelivered(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock)
    stale = await claim_api(driver, clock, worker="w1")
    assert stale is not None
    stale_step, _ = stale
    # The job goes back (a lapsed lease, a drain) and another worker claims it.
    assert await driver.job_nack(nack=Nack(stale_step.claim, "release", run_at=clock.now()), now=clock.now())
    fresh = await claim_api(driver, clock, worker="w2")
    assert fresh is not None
    with pytest.raises(JobsError) as err:
        await stale_step.run("charge", lambda: "from the stale run")
    assert err.value.code == X_ABORTED and "w1" in err.value.cause
    assert await fresh[0].run("charge", lambda: "from w2") == "from w2"
    assert [(s.name, s.result, s.run) for s in await driver.step_load(job_id=jid)] == [("charge", "from w2", 2)]


# --- I11, the step half: step_timeout bounds one step.run ---------------------------------------


async def test_i11_step_timeout_aborts_the_step_then_fails_it(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    jid = await enqueue(driver, ids, clock, max_attempts=2)
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def hangs() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def handler(step: StepApi, row: JobRow) -> object:
        await step.run("quick", lambda: "ok")
        return await step.run("hangs", hangs)

    run = asyncio.create_task(attempt(driver, clock, handler, step_timeout=5.0))
    await started.wait()
    clock.advance(4.9)
    await asyncio.sleep(0)
    assert not run.done()
    clock.advance(0.1)
    out = await run
    assert out.kind == "failed" and getattr(out.error, "code", None) == X_STEP_TIMEOUT
    assert cancelled.is_set()
    trace = {s.name: s for s in await driver.step_list(job_id=jid)}
    assert trace["hangs"].status == "failed" and trace["hangs"].error.startswith(X_STEP_TIMEOUT)  # type: ignore[union-attr]
    assert trace["quick"].status == "completed"
    row = await get(driver, jid)
    assert row.error_code == X_STEP_TIMEOUT and row.state is JobState.READY  # retryable, an attempt burned


async def test_i11_a_step_within_its_timeout_completes(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    await enqueue(driver, ids, clock)
    out = await attempt(driver, clock, lambda step, row: step.run("fast", lambda: 7), step_timeout=5.0)
    assert out.kind == "completed" and out.result == 7


# --- the per-step trace ---------------------------------------------------------------------------


async def test_step_list_is_the_trace_with_durations_and_result_sizes(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock)

    async def slow_fetch() -> dict[str, str]:
        clock.advance(2.5)
        return {"body": "héllo"}

    async def handler(step: StepApi, row: JobRow) -> None:
        await step.run("fetch", slow_fetch)
        await step.run("nothing", lambda: None)
        await step.sleep("cool-off", 3600)

    out = await attempt(driver, clock, handler)
    assert out.kind == "suspended"
    trace = await driver.step_list(job_id=jid)
    assert all(isinstance(s, StepRecord) for s in trace)
    fetch, nothing, cool = trace
    assert (fetch.kind, fetch.status, fetch.duration, fetch.result_size) == (
        "run",
        "completed",
        2.5,
        len('{"body":"héllo"}'.encode()),
    )
    assert (nothing.result_size, nothing.error) == (4, None)  # JSON null
    assert (cool.kind, cool.status, cool.finished_at, cool.duration, cool.result_size) == (
        "sleep",
        "waiting",
        None,
        None,
        None,
    )
    clock.advance(3600)
    assert (await attempt(driver, clock, handler)).kind == "completed"
    cool = (await driver.step_list(job_id=jid))[2]
    assert (cool.status, cool.duration, cool.attempt) == ("completed", 3600.0, 1)
    assert cool.started_at == fetch.started_at + timedelta(seconds=2.5)


async def test_a_jobs_first_run_reads_no_stored_steps_and_a_replay_reads_them_once(
    driver: Driver, ids: IdFactory, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every step is written by a claimed run, so run 1 has nothing stored to read back.
    loads: list[str] = []
    real = driver.step_load

    async def counted(*, job_id: str) -> list[StoredStep]:
        loads.append(job_id)
        return await real(job_id=job_id)

    monkeypatch.setattr(driver, "step_load", counted)
    jid = await enqueue(driver, ids, clock)
    calls: Counter[str] = Counter()

    async def handler(step: StepApi, row: JobRow) -> int:
        await step.run("one", lambda: calls.update(["one"]))
        await step.run("two", lambda: calls.update(["two"]))
        raise RuntimeError("fail after two steps")

    assert (await attempt(driver, clock, handler)).kind == "failed" and loads == []
    clock.advance(60)
    assert (await attempt(driver, clock, handler)).kind == "failed"
    assert loads == [jid] and calls == Counter({"one": 1, "two": 1})  # the replay read both, ran neither
