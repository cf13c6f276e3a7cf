"""What `jobsctl show`, `jobsctl discard ID` and `jobsctl retry ID` say. `show`'s header counts the
attempts used: a suspension (a shed, a release) uses none until its run goes on, so a suspended
first run reads "attempts used 0 of 3" and its run #1 line says it used no attempt yet, not
"attempt 0 of 3" beside "attempt 1 of 3". A discarded dead letter is deleted: the line says so,
"done (dead -> deleted)", not "done (dead -> dead)". A retry of a job that is not dead but still
to run points at why it has not run yet, not at cancelling it."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from engine.cli import app
from engine.clock import FakeClock
from engine.drivers.postgres import PostgresDriver
from engine.ids import IdFactory
from engine.testing import Factory
from engine.types import JobState

runner = CliRunner()


def _seed(dsn: str, state: JobState) -> str:
    async def go() -> str:
        d = PostgresDriver(dsn)
        clock = FakeClock()
        try:
            f = Factory(d, IdFactory(clock), clock)
            if state is JobState.RUNNING:
                row = await f.job(JobState.READY, max_attempts=3)
                await f.claim(row.id)
                return row.id
            return (await f.job(state, max_attempts=3)).id
        finally:
            await d.close()

    return asyncio.run(go())


def _show(dsn: str, job_id: str) -> list[str]:
    out = runner.invoke(app, ["show", job_id, "--dsn", dsn])
    assert out.exit_code == 0, out.output
    return out.output.splitlines()


@pytest.mark.parametrize("state", [JobState.SUSPENDED, JobState.PARKED])
def test_show_counts_no_attempt_used_by_a_first_run_that_suspended_or_was_shed(pg_dsn: str, state: JobState) -> None:
    job_id = _seed(pg_dsn, state)
    lines = _show(pg_dsn, job_id)
    assert lines[0].endswith(f"state={state.value}  attempts used 0 of 3"), lines[0]
    (run,) = [line for line in lines if line.startswith("  run #")]
    assert run.startswith("  run #1: attempt 1 of 3 on ")
    assert run.rstrip().endswith(f" {state.value} (no attempt used yet)"), run
    assert "next run is attempt 1 of 3" in "\n".join(lines)


def test_show_counts_the_attempt_a_settled_run_used(pg_dsn: str) -> None:
    lines = _show(pg_dsn, _seed(pg_dsn, JobState.DEAD))
    assert lines[0].endswith("state=dead  attempts used 1 of 3"), lines[0]
    (run,) = [line for line in lines if line.startswith("  run #")]
    assert "no attempt used" not in run and " dead X_BOOM" in run


def test_discard_of_a_dead_letter_says_it_was_deleted_not_dead_to_dead(pg_dsn: str) -> None:
    job_id = _seed(pg_dsn, JobState.DEAD)
    out = runner.invoke(app, ["discard", job_id, "--dsn", pg_dsn])
    assert out.exit_code == 0, out.output
    assert out.output.strip() == (
        f"discard {job_id}: done (dead -> deleted); its attempts and steps went with it; "
        "its history keeps who discarded it, when and the note"
    )
    assert json.loads(runner.invoke(app, ["discard", job_id, "--json", "--dsn", pg_dsn]).stderr)["error"]["code"] == (
        "X_NOT_FOUND"
    )


@pytest.mark.parametrize(
    "state,said",
    [
        (JobState.READY, "it is already waiting to run"),
        (JobState.DELAYED, "it is already due to run later"),
        (JobState.PARKED, "a limit shed it and it runs again once the limit allows"),
        (JobState.SUSPENDED, "it waits (a sleep, an event or other jobs) and goes on by itself"),
        (JobState.RUNNING, "it is running now"),
    ],
)
def test_retry_of_a_job_still_to_run_says_so_and_points_at_why_not_cancel(
    pg_dsn: str, state: JobState, said: str
) -> None:
    job_id = _seed(pg_dsn, state)
    out = runner.invoke(app, ["retry", job_id, "--json", "--dsn", pg_dsn])
    assert out.exit_code == 1
    err = json.loads(out.stderr)["error"]
    assert err["code"] == "X_INVALID_STATE"
    assert err["cause"] == f"job {job_id} is {state.value}: {said}; only a dead job can be retried"
    assert err["fix"] == f"jobsctl why {job_id}"
