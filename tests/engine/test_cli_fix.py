"""`jobsctl show` and `jobsctl dead` print what a dead letter's error said to do (its fix), with the
error it came with; `--json` carries it on the attempt and on the group."""

from __future__ import annotations

import asyncio
import json

from typer.testing import CliRunner

from engine.cli import app
from engine.clock import FakeClock
from engine.drivers.postgres import PostgresDriver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.retry import RetryPolicy, register_error_retry
from engine.testing import Factory
from engine.types import JobState

FIX = "jobsctl retry ID once [bold]the card[/bold] is updated"  # markup shown as typed
register_error_retry({"X_TEST_CLI_DECLINED": "terminal"})


def _dead_with_fix(dsn: str) -> tuple[str, str]:
    """A job dead on its first attempt, settled as the worker settles a handler's error."""

    async def seed() -> tuple[str, str]:
        d = PostgresDriver(dsn)
        clock = FakeClock()
        try:
            f = Factory(d, IdFactory(clock), clock)
            row = await f.job(JobState.READY, max_attempts=3)
            error = JobsError("X_TEST_CLI_DECLINED", "declined", FIX)
            assert (await f.fail(await f.claim(row.id), error, RetryPolicy(attempts=3))).outcome == "dead"
            return row.id, row.name
        finally:
            await d.close()

    return asyncio.run(seed())


def test_jobs_show_and_jobs_dead_print_the_fix_the_error_named(pg_dsn: str) -> None:
    job_id, name = _dead_with_fix(pg_dsn)
    runner = CliRunner()
    shown = runner.invoke(app, ["show", job_id, "--dsn", pg_dsn])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    at = lines.index(f"fix: {FIX}")
    assert lines[at - 1].startswith("last error: X_TEST_CLI_DECLINED: declined")
    as_json = json.loads(runner.invoke(app, ["show", job_id, "--json", "--dsn", pg_dsn]).stdout)
    assert [a["fix"] for a in as_json["attempts"]] == [FIX]
    dead = runner.invoke(app, ["dead", "--dsn", pg_dsn], env={"COLUMNS": "200"})
    assert dead.exit_code == 0, dead.output
    assert f"fix ({name}, X_TEST_CLI_DECLINED): {FIX}" in dead.output.splitlines()
    groups = json.loads(runner.invoke(app, ["dead", "--json", "--dsn", pg_dsn]).stdout)["groups"]
    assert [g["last_fix"] for g in groups] == [FIX]
