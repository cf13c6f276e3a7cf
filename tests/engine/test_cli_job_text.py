"""`jobsctl show ID` on a job whose last error is history: a job keeps its last error after a later
attempt completes, and the detail says which attempt it came from rather than showing it as what
the job is doing; --json carries the same in ``last_error_attempt``, beside the row it reads."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from typer.testing import CliRunner

from engine.cli import app
from engine.clock import FakeClock
from engine.drivers.postgres import PostgresDriver
from engine.ids import IdFactory
from engine.testing import Factory
from engine.types import JobState

runner = CliRunner()
ERROR = "X_TEST_SHOW_DECLINED: the card was declined"


def _show(dsn: str, job_id: str) -> tuple[list[str], dict[str, Any]]:
    text = runner.invoke(app, ["show", job_id, "--dsn", dsn])
    assert text.exit_code == 0, text.output
    as_json = runner.invoke(app, ["show", job_id, "--dsn", dsn, "--json"])
    assert as_json.exit_code == 0, as_json.output
    return text.output.splitlines(), json.loads(as_json.stdout)


def _error_line(lines: list[str]) -> str:
    return next(line for line in lines if line.startswith("last error"))


def test_show_labels_the_last_error_with_its_earlier_attempt_once_a_later_one_completed(pg_dsn: str) -> None:
    async def seed(complete: bool, job_id: str | None = None) -> str:
        d = PostgresDriver(pg_dsn)
        clock = FakeClock()
        try:
            f = Factory(d, IdFactory(clock), clock)
            if job_id is None:
                job_id = (await f.job(JobState.READY, max_attempts=3)).id
                claim = await f.claim(job_id)
                await f.nack(claim, "retry", run_at=f.now, error=ERROR, error_code="X_TEST_SHOW_DECLINED")
            if complete:
                await f.complete(await f.claim(job_id))
            return job_id
        finally:
            await d.close()

    job_id = asyncio.run(seed(complete=False))
    lines, shown = _show(pg_dsn, job_id)
    assert _error_line(lines) == f"last error: {ERROR}"  # waiting for its retry: the error is the latest word
    assert shown["last_error_attempt"] == {"run": 1, "attempt": 1, "earlier": False}

    asyncio.run(seed(complete=True, job_id=job_id))
    lines, shown = _show(pg_dsn, job_id)
    assert shown["job"]["state"] == "completed" and shown["job"]["last_error"] == ERROR  # the row, as it is
    assert _error_line(lines) == f"last error (run #1, attempt 1, before run #2 completed): {ERROR}"
    assert shown["last_error_attempt"] == {"run": 1, "attempt": 1, "earlier": True}
    assert [a["outcome"] for a in shown["attempts"]] == ["retried", "completed"]


def test_show_labels_the_last_error_of_a_job_running_its_next_attempt(pg_dsn: str) -> None:
    async def seed() -> str:
        d = PostgresDriver(pg_dsn)
        clock = FakeClock()
        try:
            f = Factory(d, IdFactory(clock), clock)
            job_id = (await f.job(JobState.READY, max_attempts=3)).id
            await f.nack(await f.claim(job_id), "retry", run_at=f.now, error=ERROR, error_code="X_TEST_SHOW_DECLINED")
            await f.claim(job_id)
            return job_id
        finally:
            await d.close()

    job_id = asyncio.run(seed())
    lines, shown = _show(pg_dsn, job_id)
    assert _error_line(lines) == f"last error (run #1, attempt 1, before attempt 2, running now): {ERROR}"
    assert shown["last_error_attempt"] == {"run": 1, "attempt": 1, "earlier": True}
