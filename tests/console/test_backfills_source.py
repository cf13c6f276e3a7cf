"""How the console knows an app's backfills: `jobs-console --app MODULE` (default $JOBS_APP)
imports the module `jobsctl backfill --app` imports, before the terminal is taken over; `--env`
names this console's environment. On real PostgreSQL, over the demo app's real table."""

from __future__ import annotations

import pytest

from console.demo.accounts import PostgresAccounts
from console.source import open_source
from tests.console.test_e2e_cli import assert_clear_error, run


def test_an_app_module_that_does_not_import_is_refused_before_the_terminal() -> None:
    r = run("--dsn", "postgresql://bob@/app?host=/nonexistent", "--app", "no_such_app.backfills")
    assert_clear_error(r, "X_WORKER_TARGET", 1, "python -c 'import no_such_app.backfills'")


def test_the_app_module_comes_from_jobs_app_too() -> None:
    r = run("--dsn", "postgresql://bob@/app?host=/nonexistent", env={"JOBS_APP": "no_such_app.backfills"})
    assert_clear_error(r, "X_WORKER_TARGET", 1, "python -c 'import no_such_app.backfills'")


def test_the_demo_refuses_app_and_env_it_would_ignore() -> None:
    assert_clear_error(run("--env", "staging", "demo"), "X_INVALID_ARGUMENT", 2, "jobs-console demo")
    assert_clear_error(run("--app", "myapp.backfills", "demo"), "X_INVALID_ARGUMENT", 2, "jobs-console demo")


async def test_i22_open_source_loads_the_apps_backfills_as_jobs_backfill_does(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    PostgresAccounts(pg_dsn).create(rows=1000)
    monkeypatch.setenv("JOBS_DSN", pg_dsn)  # where the module's own catalog finds the app's table
    source = await _open(pg_dsn, app="console.demo.accounts", environment="staging")
    try:
        board = await source.backfills()
        assert (board.environment, board.app, board.declared) == ("staging", "console.demo.accounts", 2)
        assert [(v.name, v.environment, v.status, v.gate) for v in board.rows] == [
            ("accounts_email_lower", "staging", "pending", None),  # this console's environment first
            ("accounts_email_lower", "production", "pending", None),
            ("accounts_plan_tier", "staging", "pending", None),
        ]
        started = await source.start_backfill("accounts_plan_tier", "staging")
        [run_row] = (await source.backfills()).history[("accounts_plan_tier", "staging")]
        assert (run_row.id, run_row.dry_run, run_row.actor) == (started.run_id, True, source.actor)
    finally:
        await source.engine.aclose()


async def _open(dsn: str, **kw: str):  # type: ignore[no-untyped-def]
    import asyncio

    return await asyncio.to_thread(open_source, dsn, **kw)
