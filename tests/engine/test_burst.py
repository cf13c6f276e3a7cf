"""A burst worker (burst=True, `jobsctl worker --burst`, engine.testing.run_due) stops once nothing
in its queues is due and every job it claimed has settled, deciding on the claim's own notion of
due (engine/runtime/burst.py). On both drivers and the fake clock; every wait is on the worker's
own end (run_due returns when it has stopped)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from engine.api import Engine, connect
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.ids import IdFactory
from engine.jobs import job
from engine.retry import RetryPolicy
from engine.runtime.worker import WorkerConfig
from engine.testing import arun_due, run_due
from engine.types import JobState
from tests.contract.test_outbox import app_tx
from tests.engine import test_worker_app as app

Q = "burst-q"
GATES: dict[str, asyncio.Event] = {}


@job(name="b.leaf", queue=Q, idempotency_key=lambda inp: inp["k"])
async def leaf(ctx, inp):  # type: ignore[no-untyped-def]
    return inp["k"]


@job(name="b.fan", queue=Q, idempotency_key=lambda inp: inp["k"])
async def fan(ctx, inp):  # type: ignore[no-untyped-def]
    """Enqueues its children (another fan while depth lasts, else leaves) before it returns."""
    eng: Engine = inp_engine()
    if inp["depth"]:
        await eng.aenqueue(fan, {"k": f"{inp['k']}.f", "depth": inp["depth"] - 1})
    await eng.aenqueue(leaf, {"k": f"{inp['k']}.l"})
    return inp["k"]


@job(name="b.gated", queue=Q, idempotency_key=lambda inp: inp["k"])
async def gated(ctx, inp):  # type: ignore[no-untyped-def]
    """Holds its run until the test opens its gate, then enqueues a leaf."""
    GATES["started"].set()
    await GATES["open"].wait()
    await inp_engine().aenqueue(leaf, {"k": "after-gate"})
    return "gated"


@job(name="b.overdue", queue=Q, idempotency_key=lambda inp: inp["k"])
async def overdue(ctx, inp):  # type: ignore[no-untyped-def]
    """Enqueues a leaf due an hour ago: before every claim floor this run's claim left."""
    eng = inp_engine()
    await eng.aenqueue(leaf, {"k": "overdue"}, run_at=eng.clock.now() - timedelta(hours=1))
    return "overdue"


@job(
    name="b.boom",
    queue=Q,
    idempotency_key=lambda inp: inp["k"],
    retry=RetryPolicy(attempts=3, delay=5, backoff="fixed"),
)
async def boom(ctx, inp):  # type: ignore[no-untyped-def]
    raise RuntimeError("boom")


@job(name="b.hang", queue=Q, idempotency_key=lambda inp: inp["k"])
async def hang(ctx, inp):  # type: ignore[no-untyped-def]
    await asyncio.Event().wait()


ENGINE: list[Engine] = []


def inp_engine() -> Engine:
    return ENGINE[-1]


@pytest.fixture
def eng(driver: Driver, clock: FakeClock) -> Engine:
    ENGINE.append(Engine(driver, clock=clock, ids=IdFactory(clock, seed=11)))
    GATES.clear()
    GATES.update(started=asyncio.Event(), open=asyncio.Event())
    return ENGINE[-1]


@job(name="b.checkout", queue=Q, idempotency_key=lambda inp: inp["k"])
async def checkout(ctx, inp):  # type: ignore[no-untyped-def]
    """Stages a leaf in an application transaction of its own, as an app's handler would."""
    eng = inp_engine()
    async with app_tx(eng.driver) as tx:
        await eng.astage(tx, leaf, {"k": f"{inp['k']}.staged"})
    return inp["k"]


ALL = [leaf, fan, gated, overdue, boom, hang, checkout]


async def test_run_due_runs_every_due_job_and_every_job_those_runs_enqueue_then_returns(eng: Engine) -> None:
    roots = [(await eng.aenqueue(fan, {"k": f"r{n}", "depth": 2})).id for n in range(3)]
    ran = await arun_due(eng, ALL, concurrency=4)
    # each root: fan -> fan -> fan, each fan one leaf: 3 fans and 3 leaves a root
    assert ran.outcomes == {"completed": 18}
    assert [ex.name for ex in ran.executions].count("b.leaf") == 9
    for job_id in roots:
        assert (await eng.aget(job_id)).state is JobState.COMPLETED
        assert [ex.outcome for ex in ran.of(job_id)] == ["completed"]
    assert await eng.driver.worker_list(now=eng.clock.now()) == []  # stopped and deregistered


async def test_run_due_with_relay_publishes_what_was_staged_and_what_its_runs_stage(eng: Engine) -> None:
    async with app_tx(eng.driver) as tx:
        await eng.astage(tx, checkout, {"k": "order-1"})
    without = await arun_due(eng, ALL)  # no relay: a staged job is not published, so not run
    assert without.executions == ()
    ran = await arun_due(eng, ALL, relay=True)
    assert sorted(ex.name for ex in ran.executions) == ["b.checkout", "b.leaf"]  # the leaf its run staged
    assert ran.outcomes == {"completed": 2}


async def test_a_burst_does_not_end_while_a_run_it_claimed_is_still_going(eng: Engine) -> None:
    await eng.aenqueue(gated, {"k": "g"})
    running = asyncio.ensure_future(arun_due(eng, ALL))
    await GATES["started"].wait()  # the worker's claims now find nothing due, with this run going
    for _ in range(20):
        await asyncio.sleep(0)
    assert not running.done()
    GATES["open"].set()
    ran = await running
    assert sorted(ex.name for ex in ran.executions) == ["b.gated", "b.leaf"]  # the leaf it enqueued last


async def test_a_burst_ends_only_on_a_full_claim_so_a_job_due_before_the_claim_floors_runs(eng: Engine) -> None:
    await eng.aenqueue(overdue, {"k": "o"})
    ran = await arun_due(eng, ALL, concurrency=1, batch_size=1)
    # both ran; a completion is reported when its ack lands, and two acks in flight may land in
    # either order
    assert sorted(ex.name for ex in ran.executions) == ["b.leaf", "b.overdue"]


async def test_a_retry_waits_out_its_backoff_and_a_later_run_due_runs_it_once_the_clock_passes(
    eng: Engine, clock: FakeClock
) -> None:
    failing = (await eng.aenqueue(boom, {"k": "b"})).id
    later = (await eng.aenqueue(leaf, {"k": "later"}, delay=60)).id
    ran = await arun_due(eng, ALL)
    assert ran.outcomes == {"retried": 1}
    assert (await eng.aget(failing)).state is JobState.DELAYED
    assert (await eng.aget(later)).state is JobState.DELAYED  # not due: not run, not waited for
    clock.advance(5)
    again = await arun_due(eng, ALL)
    assert [(ex.outcome, ex.attempt) for ex in again.executions] == [("retried", 2)]
    clock.advance(60)
    last = await arun_due(eng, ALL)
    assert sorted((ex.name, ex.outcome) for ex in last.executions) == [("b.boom", "dead"), ("b.leaf", "completed")]


async def test_run_due_gives_up_after_its_timeout_and_hands_the_run_back(eng: Engine) -> None:
    stuck = (await eng.aenqueue(hang, {"k": "h"})).id
    with pytest.raises(TimeoutError, match=r"gave up after 0.3 s: 1 run\(s\) had not ended"):
        await arun_due(eng, ALL, timeout=0.3)
    row = await eng.aget(stuck)
    assert row.state is JobState.READY  # released by the drain, its attempt given back
    assert await eng.driver.worker_list(now=eng.clock.now()) == []


async def test_burst_options_that_run_due_sets_itself_or_of_the_wrong_type_are_refused(eng: Engine) -> None:
    for bad in ({"burst": False}, {"on_execution": print}):
        with pytest.raises(JobsError) as err:
            await arun_due(eng, ALL, **bad)
        assert err.value.code == X_INVALID_ARGUMENT and "run_due sets" in err.value.cause
    with pytest.raises(JobsError) as err:
        WorkerConfig(burst="yes")  # type: ignore[arg-type]
    assert err.value.code == X_INVALID_ARGUMENT and err.value.fix == "burst=True"


def test_jobs_worker_burst_runs_what_is_due_and_exits_zero(pg_dsn: str, tmp_path: Path) -> None:
    eng = connect(pg_dsn)
    try:
        ids = [eng.enqueue(app.pg_work, {"n": n}).id for n in range(5)]
        root = Path(__file__).resolve().parents[2]
        done = subprocess.run(
            [sys.executable, "-c", "from engine.cli import main; main()", "worker", "tests.engine.test_worker_app"]
            + ["--dsn", pg_dsn, "--burst", "--no-maintenance"],
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root), "JOBS_TEST_FAST": "1"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert '"jobs.worker.burst-done"' in done.stderr
        assert re.search(r"^jobsctl worker \S+ burst done in [0-9.]+ s: 5 completed$", done.stdout, re.M), done.stdout
        assert {eng.get(i).state for i in ids} == {JobState.COMPLETED}
    finally:
        eng.close()


@job(name="b.sync_call", queue=Q, idempotency_key=lambda inp: inp["k"], retry=RetryPolicy(attempts=1))
async def sync_call(ctx, inp):  # type: ignore[no-untyped-def]
    """An async handler making a sync engine call: on the engine's own loop it would wait for itself."""
    return inp_engine().enqueue(leaf, {"k": "from-sync"}).id


def test_run_due_runs_a_sync_tests_jobs_on_the_engines_own_loop(pg_dsn: str) -> None:
    eng = connect(pg_dsn)
    ENGINE.append(eng)
    try:
        root = eng.enqueue(fan, {"k": "s", "depth": 1}).id
        ran = run_due(eng, ALL)
        assert ran.outcomes == {"completed": 4} and eng.get(root).state is JobState.COMPLETED
        stuck = eng.enqueue(sync_call, {"k": "x"}).id  # refused at once, never a hang
        (ex,) = run_due(eng, [*ALL, sync_call], timeout=20).executions
        assert (ex.job_id, ex.outcome, ex.error_code) == (stuck, "dead", "X_SYNC_IN_LOOP")
    finally:
        eng.close()


async def test_a_sync_call_inside_a_running_loop_is_said_once_as_blocking_it(
    eng: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("WARNING", logger="jobs")
    eng.enqueue(leaf, {"k": "1"})
    eng.get(eng.enqueue(leaf, {"k": "2"}).id)
    said = [r for r in caplog.records if r.getMessage() == "jobs.engine.sync-in-loop"]
    assert len(said) == 1 and said[0].fields["call"] == "enqueue"  # type: ignore[attr-defined]
    assert "await eng.aenqueue" in said[0].fields["fix"]  # type: ignore[attr-defined]


def test_a_sync_call_outside_any_loop_says_nothing(pg_dsn: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("WARNING", logger="jobs")
    with connect(pg_dsn) as eng:
        eng.enqueue(leaf, {"k": "quiet"})
    assert not [r for r in caplog.records if r.getMessage() == "jobs.engine.sync-in-loop"]
