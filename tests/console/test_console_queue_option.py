"""`jobs-console --queue NAME` on a real database: a name no job, worker or pause names is answered
before the screen is taken over, as `jobsctl pause` answers it (X_UNKNOWN_QUEUE, the names it may
have meant, and the console's command on the closest), never a console filtered to nothing."""

from __future__ import annotations

from typer.testing import CliRunner

from console.cli import EXIT_ERROR, app
from engine import connect, job


@job(name="charge", queue="billing", idempotency_key=lambda inp: str(inp["n"]))
async def charge(ctx: object, inp: dict[str, int]) -> None: ...


def test_a_mistyped_queue_is_answered_with_the_queue_it_may_have_meant(pg_dsn: str) -> None:
    eng = connect(pg_dsn)
    eng.enqueue(charge, {"n": 1})
    eng.close()
    r = CliRunner(env={"JOBS_DSN": None}).invoke(app, ["--dsn", pg_dsn, "--queue", "billng"])
    assert r.exit_code == EXIT_ERROR, r.output
    assert r.stderr.startswith(
        "error X_UNKNOWN_QUEUE: no job, worker or pause names queue 'billng'; did you mean 'billing'?"
    )
    assert "  fix: jobs-console --queue billing\n" in r.stderr
