"""A failed attempt's traceback: stored whole up to the worker's traceback_limit, its tail past
it (where the error was raised), marked where it was cut; shown by `jobsctl show`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from engine.api import Engine
from engine.cli import app
from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.jobs import job
from engine.retry import RetryPolicy, failure_traceback
from engine.runtime.worker import WorkerConfig
from tests.engine.test_worker import Q, next_of, running


def _raised(depth: int) -> BaseException:
    def dive(n: int) -> None:
        if n == 0:
            raise ValueError("the bottom")
        dive(n - 1)

    try:
        dive(depth)
    except ValueError as exc:
        return exc
    raise AssertionError("unreachable")


def test_a_short_traceback_is_stored_whole() -> None:
    text = failure_traceback(_raised(2), 8192)
    assert text is not None and text.startswith("Traceback (most recent call last):")
    assert text.endswith("ValueError: the bottom") and "in dive" in text


def test_a_long_traceback_keeps_its_tail_from_a_line_start_under_a_cut_marker() -> None:
    whole = failure_traceback(_raised(60), 10**6)
    cut = failure_traceback(_raised(60), 500)
    assert whole is not None and cut is not None and len(whole) > 500
    marker, tail = cut.split("\n", 1)
    assert marker == f"[... {len(whole) - len(tail)} earlier characters cut (traceback_limit=500)]"
    assert whole.endswith(tail) and len(tail) <= 500 and tail.endswith("ValueError: the bottom")
    assert whole[len(whole) - len(tail) - 1] == "\n"  # the kept part starts at a line


def test_no_traceback_for_an_error_never_raised_or_a_limit_of_zero() -> None:
    assert failure_traceback(ValueError("built, not raised (a timeout's)"), 8192) is None
    assert failure_traceback(_raised(1), 0) is None


def test_traceback_limit_is_refused_when_not_a_whole_number_of_characters() -> None:
    for bad in (-1, 1.5, True):
        with pytest.raises(JobsError) as err:
            WorkerConfig(traceback_limit=bad)  # type: ignore[arg-type]
        assert err.value.code == "X_INVALID_ARGUMENT" and "traceback_limit" in err.value.cause


@job(name="x.explodes", queue=Q, idempotency_key=lambda inp: str(inp["n"]), retry=RetryPolicy(attempts=1))
async def explodes(ctx: Any, inp: Any) -> None:
    {}["missing"]  # noqa: B018


async def test_the_worker_stores_the_handlers_traceback_bounded_by_its_config(clock: FakeClock) -> None:
    mem = MemoryDriver()
    eng = Engine(mem, clock=clock, ids=IdFactory(clock, seed=11))
    async with running(mem, clock, explodes, traceback_limit=120) as (_, seen):
        r = await eng.aenqueue(explodes, {"n": 1})
        assert (await next_of(seen)).outcome == "dead"
    (attempt,) = await mem.job_attempts(job_id=r.id)
    assert attempt.error is not None and attempt.error.startswith("KeyError: 'missing'")
    assert attempt.traceback is not None and attempt.traceback.endswith("KeyError: 'missing'")
    assert "earlier characters cut (traceback_limit=120)" in attempt.traceback.splitlines()[0]


def test_jobs_show_prints_the_last_failed_attempts_traceback_beside_the_message(pg_dsn: str) -> None:
    import asyncio

    from engine.drivers.postgres import PostgresDriver
    from engine.testing import make_job
    from engine.types import JobState, Nack

    trace = (
        'Traceback (most recent call last):\n  File "shop/jobs.py", line 3, in charge\n'
        "    raise KeyError(\"[bold]x\")\nKeyError: '[bold]x'"
    )

    async def seed() -> str:
        d = PostgresDriver(pg_dsn)
        clock = FakeClock()
        try:
            row = await make_job(d, IdFactory(clock), clock.now(), state=JobState.READY, max_attempts=1)
            (cj,) = (
                await d.worker_claim(queues=["default"], limit=1, worker="w1", now=clock.now(), lease_seconds=30)
            ).jobs
            nack = Nack(
                cj.claim,
                "dead",
                error="KeyError: x",
                error_code="X_HANDLER_FAILED",
                stop_reason="attempts-exhausted",
                traceback=trace,
            )
            assert await d.job_nack(nack=nack, now=clock.now())
            return row.id
        finally:
            await d.close()

    job_id = asyncio.run(seed())
    runner = CliRunner()
    text = runner.invoke(app, ["show", job_id, "--dsn", pg_dsn])
    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    at = lines.index("traceback (run #1, attempt 1):")
    assert lines[at - 1].startswith("last error: KeyError: x")
    assert lines[at + 1 :][:4] == ["  " + line for line in trace.splitlines()]  # markup shown as typed
    shown = json.loads(runner.invoke(app, ["show", job_id, "--json", "--dsn", pg_dsn]).stdout)
    assert [a["traceback"] for a in shown["attempts"]] == [trace]
