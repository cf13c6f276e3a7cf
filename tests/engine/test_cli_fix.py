"""`jobs show` and `jobs dead` print what a dead letter's error said to do (its fix), with the
error it came with; `--json` carries it on the attempt and on the group."""

from __future__ import annotations

import asyncio
import json

from typer.testing import CliRunner

from engine.cli import app
from engine.clock import FakeClock
from engine.drivers.postgres import PostgresDriver
from engine.ids import IdFactory
from engine.testing import make_job
from engine.types import JobState, Nack

FIX = "jobs retry ID once [bold]the card[/bold] is updated"  # markup shown as typed


def _dead_with_fix(dsn: str) -> tuple[str, str]:
    async def seed() -> tuple[str, str]:
        d = PostgresDriver(dsn)
        clock = FakeClock()
        try:
            row = await make_job(d, IdFactory(clock), clock.now(), state=JobState.READY, max_attempts=3)
            claimed = await d.worker_claim(queues=["default"], limit=1, worker="w1", now=clock.now(), lease_seconds=30)
            nack = Nack(
                claimed.jobs[0].claim,
                "dead",
                error="X_CARD_DECLINED: declined [stop: terminal at attempt 1 of 3]",
                error_code="X_CARD_DECLINED",
                stop_reason="terminal",
                fix=FIX,
            )
            assert await d.job_nack(nack=nack, now=clock.now())
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
    assert lines[at - 1].startswith("last error: X_CARD_DECLINED: declined")
    as_json = json.loads(runner.invoke(app, ["show", job_id, "--json", "--dsn", pg_dsn]).stdout)
    assert [a["fix"] for a in as_json["attempts"]] == [FIX]
    dead = runner.invoke(app, ["dead", "--dsn", pg_dsn], env={"COLUMNS": "200"})
    assert dead.exit_code == 0, dead.output
    assert f"fix ({name}, X_CARD_DECLINED): {FIX}" in dead.output.splitlines()
    groups = json.loads(runner.invoke(app, ["dead", "--json", "--dsn", pg_dsn]).stdout)["groups"]
    assert [g["last_fix"] for g in groups] == [FIX]
