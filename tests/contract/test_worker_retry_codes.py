"""I4 at the worker, on every driver: the retry decision reads the error a handler raises. A
terminal code dies at attempt 1 of N; a retry-after code is retried at the delay it names, clamped
by the policy's max_delay, and burns an attempt."""

from __future__ import annotations

from datetime import timedelta

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.jobs import job
from engine.retry import RetryPolicy, register_error_retry
from engine.types import JobState
from tests.engine.test_worker import Q, next_of, running

register_error_retry({"X_TEST_WORKER_DENIED": "terminal", "X_TEST_WORKER_THROTTLED": "retry-after"})


@job(name="i4.denied", queue=Q, idempotency_key=lambda inp: str(inp["n"]), retry=RetryPolicy(attempts=4, delay=1.0))
async def denied(ctx, inp):  # type: ignore[no-untyped-def]
    raise JobsError("X_TEST_WORKER_DENIED", cause="the token was revoked", fix="issue a new token")


@job(
    name="i4.throttled",
    queue=Q,
    idempotency_key=lambda inp: str(inp["after"]),
    retry=RetryPolicy(attempts=4, delay=1.0, max_delay=60.0),
)
async def throttled(ctx, inp):  # type: ignore[no-untyped-def]
    raise JobsError(
        "X_TEST_WORKER_THROTTLED", cause="rate limited upstream", fix="wait", retry_after=float(inp["after"])
    )


async def test_i4_a_terminal_code_dies_at_attempt_1_of_n_at_the_worker(driver: Driver, clock: FakeClock) -> None:
    eng = Engine(driver, clock=clock, ids=IdFactory(clock, seed=41))
    async with running(driver, clock, denied) as (w, seen):  # type: ignore[arg-type]
        r = await eng.aenqueue(denied, {"n": 1})
        done = await next_of(seen)
    assert (done.outcome, done.stop_reason, done.error_code, done.attempt) == (
        "dead",
        "terminal",
        "X_TEST_WORKER_DENIED",
        1,
    )
    row = await driver.job_get(job_id=r.id)
    assert row is not None and (row.state, row.attempt, row.max_attempts) == (JobState.DEAD, 1, 4)
    assert row.last_error is not None and "terminal" in row.last_error


async def test_i4_a_retry_after_code_is_retried_at_the_named_delay_clamped_by_max_delay(
    driver: Driver, clock: FakeClock
) -> None:
    eng = Engine(driver, clock=clock, ids=IdFactory(clock, seed=42))
    async with running(driver, clock, throttled) as (w, seen):  # type: ignore[arg-type]
        named = await eng.aenqueue(throttled, {"after": 17})
        first = await next_of(seen)
        failed_at = clock.now()
        clamped = await eng.aenqueue(throttled, {"after": 3600})
        second = await next_of(seen)
    assert (first.outcome, first.attempt, second.outcome) == ("retried", 1, "retried")
    a = await driver.job_get(job_id=named.id)
    b = await driver.job_get(job_id=clamped.id)
    assert a is not None and (a.state, a.attempt) == (JobState.DELAYED, 1)
    assert a.run_at == failed_at + timedelta(seconds=17)  # the delay the error named, not the backoff's 1 s
    assert b is not None and (b.state, b.attempt) == (JobState.DELAYED, 1)
    assert b.run_at == clock.now() + timedelta(seconds=60)  # 3600 s named, clamped by max_delay=60
