"""Waiting for a job's outcome (engine/outcomes.py): ``eng.aoutcome`` answers the row once it has
settled, reads it on a doubling schedule capped at POLL_MAX, and fails only the wait itself
(X_WAIT_TIMEOUT, X_NOT_FOUND), never the job. Both drivers, the fake clock; and `jobsctl wait` /
`jobsctl enqueue --wait` with their exit codes on PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, X_NOT_FOUND, X_WAIT_TIMEOUT, JobsError
from engine.ids import IdFactory
from engine.introspect.base import EngineView
from engine.jobs import job
from engine.outcomes import POLL_FIRST, POLL_MAX, await_outcomes
from engine.retry import RetryPolicy
from engine.testing import arun_due
from engine.types import JobRow, JobState
from tests.engine.test_cli_introspect import app_module, cli, seed  # noqa: F401  (app_module: a fixture)

Q = "outcome-q"


@job(name="o.double", queue=Q, idempotency_key=lambda inp: inp["k"])
async def double(ctx, inp):  # type: ignore[no-untyped-def]
    return {"twice": inp["n"] * 2}


@job(name="o.broken", queue=Q, idempotency_key=lambda inp: inp["k"], retry=RetryPolicy(attempts=1))
async def broken(ctx, inp):  # type: ignore[no-untyped-def]
    raise RuntimeError("the gateway said no")


@pytest.fixture
def eng(driver: Driver, clock: FakeClock) -> Engine:
    return Engine(driver, clock=clock, ids=IdFactory(clock, seed=5))


async def until(condition: Callable[[], bool]) -> None:
    """Yield to the loop until ``condition`` holds, as the contract suite waits on the fake clock's
    sleepers (each turn lets the waiting task step once, its statements answered between turns)."""
    while not condition():
        await asyncio.sleep(0)


def reads_of(eng: Engine, clock: FakeClock, ids_read: list[list[str]] | None = None) -> list[float]:
    """The fake clock's time at every read of rows by id (the waits' polls among them); the ids
    each read asked for go to ``ids_read``."""
    at: list[float] = []
    one, many = eng.driver.job_get, eng.driver.job_get_many

    async def job_get(*, job_id: str) -> Any:
        at.append(clock.monotonic())
        if ids_read is not None:
            ids_read.append([job_id])
        return await one(job_id=job_id)

    async def job_get_many(*, job_ids: Any) -> Any:
        at.append(clock.monotonic())
        if ids_read is not None:
            ids_read.append(list(job_ids))
        return await many(job_ids=job_ids)

    eng.driver.job_get = job_get  # type: ignore[method-assign]
    eng.driver.job_get_many = job_get_many  # type: ignore[method-assign]
    return at


async def test_the_outcome_of_a_job_is_its_settled_row_once_a_worker_has_run_it(eng: Engine, clock: FakeClock) -> None:
    ok = (await eng.aenqueue(double, {"k": "a", "n": 21})).id
    bad = (await eng.aenqueue(broken, {"k": "b"})).id
    waits = [asyncio.ensure_future(eng.aoutcome(jid[-8:], timeout=60)) for jid in (ok, bad)]  # short ids too
    await until(lambda: clock.sleepers == 2)  # each read its live row and sleeps until its next read
    await arun_due(eng, [double, broken])
    assert not any(w.done() for w in waits)  # nothing answers before its next read
    clock.advance(POLL_FIRST)
    done, failed = await asyncio.gather(*waits)
    assert (done.id, done.state, done.result) == (ok, JobState.COMPLETED, {"twice": 42})
    # a dead letter is an outcome, not an error: the row says how it stopped
    assert (failed.id, failed.state, failed.stop_reason) == (bad, JobState.DEAD, "attempts-exhausted")
    assert "the gateway said no" in (failed.last_error or "")


async def test_a_wait_past_its_timeout_is_x_wait_timeout_and_leaves_the_job_as_it_was(
    eng: Engine, clock: FakeClock
) -> None:
    later = (await eng.aenqueue(double, {"k": "later", "n": 1}, delay=3600)).id
    before = await eng.aget(later)
    reads = reads_of(eng, clock)
    waiting = asyncio.ensure_future(eng.aoutcome(later, timeout=3))
    pauses = []
    while not waiting.done():
        await until(lambda: waiting.done() or clock.sleepers == 1)
        if not waiting.done():
            pauses.append(round(clock.wake_next(), 6))
    with pytest.raises(JobsError) as err:
        await waiting
    polled = len(reads)
    assert err.value.code == X_WAIT_TIMEOUT
    assert f"job {later} (o.double) is still delayed after 3 s" in err.value.cause
    assert "nothing was changed" in err.value.cause and f"jobsctl why {later} says what it waits for" in err.value.cause
    assert err.value.fix == f"await eng.aoutcome({later!r}, timeout=60)"
    assert await eng.aget(later) == before
    # the reads: one at the start, then after pauses doubling from POLL_FIRST up to POLL_MAX, the
    # last pause cut to what is left of the timeout
    expected, pause, total = [], POLL_FIRST, 0.0
    while total < 3 - 1e-9:
        expected.append(round(min(pause, 3 - total), 6))
        total, pause = total + expected[-1], min(pause * 2, POLL_MAX)
    assert pauses == expected and polled == 1 + len(expected)
    assert max(pauses) == POLL_MAX


async def test_a_wait_for_several_jobs_reads_the_live_ones_together_one_statement_a_poll(
    eng: Engine, clock: FakeClock
) -> None:
    first, second, third = [(await eng.aenqueue(double, {"k": k, "n": 1})).id for k in ("x", "y", "z")]
    got: list[list[str]] = []
    reads_of(eng, clock, got)
    waiting = asyncio.ensure_future(await_outcomes(EngineView(eng), [first, second, third], tenant=None, timeout=60))
    await until(lambda: clock.sleepers == 1)
    del got[:]  # the three ids resolved, one read each, before anything waits
    clock.wake_next()
    await until(lambda: clock.sleepers == 1)
    assert got == [[first, second, third]]  # one statement for the three
    await eng.acancel(second, actor="ann")
    await arun_due(eng, [double], queues=[Q])  # runs the other two
    del got[1:]  # the cancel's and the runs' own reads
    clock.wake_next()
    rows = await waiting
    assert got == [[first, second, third]] * 2  # the second poll found all three settled
    assert [(r.id, r.state) for r in rows if isinstance(r, JobRow)] == [
        (first, JobState.COMPLETED),
        (second, JobState.CANCELLED),
        (third, JobState.COMPLETED),
    ]


async def test_a_wait_on_no_job_another_tenants_or_a_bad_timeout_is_refused_before_it_waits(
    eng: Engine, clock: FakeClock
) -> None:
    theirs = (await eng.aenqueue(double, {"k": "t", "n": 1}, tenant="globex")).id
    for job_id, tenant in ((theirs, "acme"), ("0" * 8 + "-0000-7000-8000-" + "0" * 12, None)):
        with pytest.raises(JobsError) as err:
            await eng.aoutcome(job_id, tenant=tenant, timeout=5)
        assert err.value.code == X_NOT_FOUND
    reads = reads_of(eng, clock)
    for bad in (-1, float("nan"), float("inf"), "5", True):
        with pytest.raises(JobsError) as err:
            await eng.aoutcome(theirs, timeout=bad)
        assert err.value.code == X_INVALID_ARGUMENT and "timeout=" in err.value.cause
    assert reads == [] and clock.sleepers == 0


async def test_a_job_deleted_while_it_is_waited_for_ends_the_wait_with_x_not_found(pg_dsn: str) -> None:
    from engine.api import connect

    eng = connect(pg_dsn)
    try:
        gone = (await eng.aenqueue(double, {"k": "gone", "n": 1}, delay=3600)).id
        waiting = asyncio.ensure_future(eng.aoutcome(gone, timeout=30))
        async with await psycopg.AsyncConnection.connect(pg_dsn, autocommit=True) as conn:
            await conn.execute("delete from jobs.job where id = %s", (gone,))
        with pytest.raises(JobsError) as err:
            await waiting
        assert err.value.code == X_NOT_FOUND and gone in err.value.cause
    finally:
        await eng.aclose()


def test_the_sync_outcome_answers_a_settled_job_at_once() -> None:
    from engine.api import connect

    eng = connect("memory://")
    try:
        jid = eng.enqueue(double, {"k": "s", "n": 4}).id
        from engine.testing import run_due

        run_due(eng, [double])
        row = eng.outcome(jid, timeout=0)  # settled: answered by the first read, however short the timeout
        assert (row.state, row.result) == (JobState.COMPLETED, {"twice": 8})
    finally:
        eng.close()


def test_jobs_wait_prints_each_outcome_and_exits_with_what_they_say(pg_dsn: str) -> None:
    done, dead, cancelled, ready = seed(
        pg_dsn, JobState.COMPLETED, JobState.DEAD, JobState.CANCELLED, JobState.READY, queue=Q
    )
    r = cli("wait", done.id, "--dsn", pg_dsn)
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith(f"{done.id} {done.name} completed at attempt")
    r = cli("wait", done.id, dead.id[-8:], "--dsn", pg_dsn, "--json")
    assert r.exit_code == 6
    assert [o["job"]["state"] for o in json.loads(r.stdout)] == ["completed", "dead"]
    r = cli("wait", dead.id, "--dsn", pg_dsn)  # its code once: the error begins with it
    assert r.exit_code == 6 and r.stdout.count("X_BOOM") == 1 and r.stdout.rstrip().endswith(": X_BOOM: boom")
    r = cli("wait", cancelled.id, "--dsn", pg_dsn)
    assert r.exit_code == 6 and "cancelled" in r.stdout
    # still live past the timeout: the settled one is printed, the live one said on stderr, exit 7
    r = cli("wait", done.id, ready.id, "--timeout", "50ms", "--dsn", pg_dsn)
    assert r.exit_code == 7 and "completed" in r.stdout
    assert "X_WAIT_TIMEOUT" in r.stderr and f"job {ready.id}" in r.stderr and "still ready" in r.stderr
    r = cli("wait", done.id, "0" * 8 + "-0000-7000-8000-" + "0" * 12, "--dsn", pg_dsn)
    assert r.exit_code == 3 and "X_NOT_FOUND" in r.stderr and r.stdout == ""  # refused before any wait
    r = cli("wait", done.id, "--timeout", "soon", "--dsn", pg_dsn)
    assert r.exit_code == 1 and "--timeout 'soon' is not a duration" in r.stderr


def test_jobs_enqueue_wait_answers_the_enqueue_then_the_outcome(app_module: str, pg_dsn: str) -> None:  # noqa: F811
    base = ("enqueue", "zeta_report", "--app", app_module, "--dsn", pg_dsn)
    r = cli(*base, "--input", '{"day": 9}', "--wait", "--timeout", "50ms")  # no worker runs it
    assert r.exit_code == 7 and " enqueued state=ready" in r.stdout and "still ready" in r.stderr
    r = cli(*base, "--input", '{"day": 9}', "--wait", "--timeout", "50ms", "--json")  # deduped: the same job
    out = json.loads(r.stdout)
    assert r.exit_code == 7 and out["enqueued"]["deduped"] and out["outcome"]["error"]["code"] == X_WAIT_TIMEOUT
    r = cli(*base, "--input", '{"day": 10}', "--timeout", "5s")  # a bound on no wait would do nothing
    assert r.exit_code == 1 and "--timeout bounds a wait" in r.stderr
