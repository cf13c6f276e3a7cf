"""`jobsctl show ID` prints no line ending in whitespace: a run without an error code, a step
without a duration or an error, a history entry, an input long enough to wrap and a stored
traceback whose lines end in spaces all end at their last visible character (a diff, a log
grep or an editor that marks trailing blanks sees none)."""

from __future__ import annotations

import asyncio

from typer.testing import CliRunner

from engine.cli import app
from engine.clock import FakeClock
from engine.drivers.postgres import PostgresDriver
from engine.ids import IdFactory
from engine.testing import Factory
from engine.types import JobState


async def _seed(dsn: str) -> str:
    d = PostgresDriver(dsn)
    clock = FakeClock()
    try:
        f = Factory(d, IdFactory(clock), clock)
        long_input = {f"field_{i}": "value with spaces " * 3 for i in range(40)}  # wraps at any width
        job = await f.job(JobState.READY, input=long_input, max_attempts=3)
        first = await f.claim(job.id)
        await f.step(first, "fetch", 1)
        await f.step(first, "render", 2, status="failed", error=None)
        await f.nack(
            first,
            "retry",
            run_at=f.now,
            error="X_TEST_SHOW_FLAKY: the upstream timed out   ",
            error_code="X_TEST_SHOW_FLAKY",
            traceback="Traceback (most recent call last):   \n  File 'x.py', line 1   \nTimeoutError   ",
        )
        await f.complete(await f.claim(job.id))  # a run with no error code
        return job.id
    finally:
        await d.close()


def test_no_line_of_show_ends_in_whitespace_a_run_without_an_error_code_included(pg_dsn: str) -> None:
    job_id = asyncio.run(_seed(pg_dsn))
    r = CliRunner().invoke(app, ["show", job_id, "--dsn", pg_dsn])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    runs = [line for line in lines if line.lstrip().startswith("run #")]
    assert len(runs) == 2 and runs[-1].endswith("completed"), runs  # the run without an error code
    assert any(line.lstrip().startswith("step 2 render") for line in lines), lines
    trailing = [line for line in lines if line != line.rstrip()]
    assert trailing == [], trailing
