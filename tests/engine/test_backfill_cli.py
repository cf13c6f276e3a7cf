"""`jobsctl backfill`: the pending alarm a deploy gates on (exit 4, JSON), a start that prints its
job id, an unknown name refused before the database, read-only actions refused; and the Django
and Alembic ledger readers on a real database."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from engine.backfills import alembic_migrations, django_migrations
from engine.cli import app
from tests.engine import backfill_app

APP = "tests.engine.backfill_app"
NOWHERE = "host=/nonexistent-socket-dir dbname=nothing user=nobody"


@pytest.fixture
def app_dsn(pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("BACKFILL_APP_DSN", pg_dsn)
    monkeypatch.delenv("JOBS_ENV", raising=False)
    backfill_app.create_accounts(pg_dsn, 100)
    return pg_dsn


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(app, ["backfill", *args])


def test_i22_pending_exits_non_zero_with_each_pending_backfill_and_its_fix(app_dsn: str) -> None:
    res = _invoke("--pending", "--app", APP, "--dsn", app_dsn, "--json")
    assert res.exit_code == 4
    out = json.loads(res.stdout)
    assert out["environment"] == "development"
    assert [p["name"] for p in out["pending"]] == ["accounts_email_lower", "accounts_even_only", "accounts_future"]
    first = out["pending"][0]["error"]
    assert (
        first["code"] == "X_BACKFILL_PENDING"
        and first["fix"] == f"jobsctl backfill accounts_email_lower --app {APP} --write"
    )
    res = _invoke("--pending", "--app", APP, "--dsn", app_dsn, "--env", "production")
    assert res.exit_code == 4 and "accounts_prod_only" in res.stdout


def test_i22_a_start_prints_its_job_id_and_a_second_one_is_refused_as_running(app_dsn: str) -> None:
    res = _invoke("accounts_email_lower", "--app", APP, "--dsn", app_dsn, "--write", "--json", "--actor", "ci")
    assert res.exit_code == 0, res.stderr
    started = json.loads(res.stdout)
    assert started["dry_run"] is False and started["name"] == "accounts_email_lower"
    res = _invoke("accounts_email_lower", "--app", APP, "--dsn", app_dsn, "--json")
    assert res.exit_code == 1
    err = json.loads(res.stderr)["error"]
    assert err["code"] == "X_BACKFILL_RUNNING" and err["fix"] == f"jobsctl show {started['job_id']}"
    assert started["job_id"] not in err["cause"]  # the id is said once, in the fix
    res = _invoke("--status", "--app", APP, "--dsn", app_dsn, "--json")
    views = {v["name"]: v for v in json.loads(res.stdout)}
    assert views["accounts_email_lower"]["status"] == "running"
    assert views["accounts_future"]["gate"]["code"] == "X_BACKFILL_MIGRATION_PENDING"
    assert views["accounts_prod_only"]["gate"]["code"] == "X_BACKFILL_ENVIRONMENT"
    res = _invoke("accounts_email_lower", "--app", APP, "--dsn", app_dsn, "--cancel", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["changed"] is True
    res = _invoke("accounts_email_lower", "--app", APP, "--dsn", app_dsn, "--history", "--json")
    assert [r["status"] for r in json.loads(res.stdout)] == ["cancelled"]


def test_i22_an_unknown_name_is_refused_before_the_database() -> None:
    res = _invoke("acounts_email_lower", "--app", APP, "--dsn", NOWHERE)
    assert res.exit_code != 0 and "error X_BACKFILL_UNKNOWN" in res.stderr
    assert "did you mean 'accounts_email_lower'" in res.stderr and "X_DB_UNREACHABLE" not in res.stderr


async def test_i22_backfill_actions_are_refused_in_read_only_mode(app_dsn: str) -> None:
    from engine.api import connect
    from engine.backfills import BackfillControl

    eng = connect(app_dsn)
    try:
        ctl = BackfillControl(eng, backfill_app, actor="alice", read_only=True)
        for call in (
            ctl.start("accounts_email_lower", write=True),
            ctl.cancel("accounts_email_lower"),
            ctl.retry("accounts_email_lower"),
        ):
            with pytest.raises(Exception) as info:
                await call
            assert getattr(info.value, "code", None) == "X_READ_ONLY"
        assert await eng.driver.backfill_runs(names=None, environment=None, limit=10) == []
    finally:
        await eng.aclose()


def test_the_django_and_alembic_readers_read_the_apps_ledgers(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("create table django_migrations (id serial, app text, name text, applied timestamptz)")
        conn.execute(
            "insert into django_migrations (app, name) values ('accounts', '0001_initial'),"
            " ('accounts', '0002_email_lower')"
        )
        conn.execute("create table alembic_version (version_num varchar(32) primary key)")
        conn.execute("insert into alembic_version values ('m4'), ('z9')")  # two heads
        assert django_migrations(conn) == {"accounts.0001_initial", "accounts.0002_email_lower"}
        graph = {"a1": None, "b2": "a1", "c3": "b2", "x3": "b2", "m4": ("c3", "x3"), "n5": "m4", "z9": "a1"}
        applied = alembic_migrations(graph=graph)(conn)
        assert applied == {"a1", "b2", "c3", "x3", "m4", "z9"} and "n5" not in applied


def test_i22_a_backfills_status_is_its_environments_own(app_dsn: str) -> None:
    """`jobsctl backfill --status` agrees with --pending and the console: a backfill whose list leaves
    this environment out is "not declared" here, not pending; a live pass is "running" only in its
    own environment (elsewhere it is the gate a start meets); the table names the last pass's mode,
    so a completed dry run's figures never read as a write."""

    def status(env: str) -> dict[str, Any]:
        res = _invoke("--status", "--app", APP, "--dsn", app_dsn, "--env", env, "--json")
        assert res.exit_code == 0, res.stderr
        return {v["name"]: v for v in json.loads(res.stdout)}

    assert status("development")["accounts_prod_only"]["status"] == "not declared"
    res = _invoke("accounts_prod_only", "--app", APP, "--dsn", app_dsn, "--env", "production", "--write")
    assert res.exit_code == 0, res.stderr
    prod, staging, dev = status("production"), status("staging"), status("development")
    assert prod["accounts_prod_only"]["status"] == "running"
    assert staging["accounts_prod_only"]["status"] == "pending"
    assert staging["accounts_prod_only"]["gate"]["code"] == "X_BACKFILL_RUNNING"
    assert dev["accounts_prod_only"]["status"] == "not declared"
    res = _invoke("--status", "--app", APP, "--dsn", app_dsn, "--env", "production")
    line = next(ln for ln in res.stdout.splitlines() if "accounts_prod_only" in ln)
    assert "running" in line and "write queued" in line


def test_i22_a_completed_dry_runs_status_says_what_it_read_and_what_a_write_would_write(
    app_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A dry run reads and writes nothing: the status table says its rows were read and what a write
    pass would write (its count() at the start), never "remaining 0" on a backfill still pending;
    --wait's last line says the same."""
    import asyncio

    from engine.api import connect
    from engine.backfills import BackfillControl
    from engine.cli.backfill import _follow, load_catalog
    from engine.testing import Factory, PassPlayer

    async def dry_run() -> Any:
        eng = connect(app_dsn)
        try:
            ctl = BackfillControl(eng, backfill_app.bf, actor="ci", environment="development")
            played = await PassPlayer.start(Factory.of(eng), ctl, "accounts_email_lower")
            assert await played.finish() == "completed"
            return played.started.job_id
        finally:
            await eng.aclose()

    job_id = asyncio.run(dry_run())
    res = _invoke("--status", "--app", APP, "--dsn", app_dsn)
    assert res.exit_code == 0, res.stderr
    line = next(ln for ln in res.stdout.splitlines() if "accounts_email_lower" in ln)
    cells = [c.strip() for c in line.split("│")[1:-1]]
    assert cells[2:6] == ["pending", "dry-run completed", "100 read", "would write 100"]
    views = {v["name"]: v for v in json.loads(_invoke("--status", "--app", APP, "--dsn", app_dsn, "--json").stdout)}
    p = views["accounts_email_lower"]["progress"]
    assert (p["dry_run"], p["swept"], p["planned"]) == (True, 100, 100)  # the JSON's figures, as they are
    assert _follow(load_catalog(APP), "accounts_email_lower", job_id, app_dsn, None, False) == 0
    said = capsys.readouterr().out.splitlines()[-1]  # after the progress bar
    assert said == "accounts_email_lower: dry run completed: 100 read, would write 100"
