"""jobsctl refusals whose fix, run as printed, does what the cause asks: `migrate --sql --since`
with a --dsn it would not read, a --dsn naming another storage, a backfill's fix keeping the
environment it was about (and an empty --env refused before any connection), and a bulk or
--children action under --json without --yes answered with the JSON error shape."""

from __future__ import annotations

import asyncio
import json
import shlex
from typing import Any

import pytest
from typer.testing import CliRunner

from engine.api import connect
from engine.backfills import BackfillControl
from engine.cli import app
from engine.drivers.postgres.dsn import shown_dsn
from engine.errors import X_BACKFILL_PENDING, JobsError
from engine.types import JobState
from tests.engine import backfill_app
from tests.engine.test_cli_introspect import seed

APP = "tests.engine.backfill_app"
NOWHERE = "host=/nonexistent-socket-dir dbname=nothing user=nobody"
PG_FIX = "postgresql://USER@HOST:5432/DBNAME"


def _cli(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(app, list(args), env=env)


def _json_error(stderr: str) -> dict[str, Any]:
    err: dict[str, Any] = json.loads(stderr)["error"]
    assert err["code"] and err["cause"] and err["fix"]
    return err


@pytest.fixture
def app_dsn(pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("BACKFILL_APP_DSN", pg_dsn)
    monkeypatch.delenv("JOBS_ENV", raising=False)
    backfill_app.create_accounts(pg_dsn, 10)
    return pg_dsn


def test_migrate_sql_since_refuses_a_dsn_it_would_not_read() -> None:
    r = _cli("migrate", "--sql", "--since", "1", "--until", "2", "--dsn", "nonsense")
    assert r.exit_code == 1 and r.stdout == "", r.output
    assert "error X_INVALID_ARGUMENT: --sql --since prints the migrations after N and reads no database" in r.stderr
    assert "--dsn would do nothing (`jobsctl migrate --sql --dsn DSN` prints that database's pending SQL)" in r.stderr
    assert "  fix: jobsctl migrate --sql --since 1 --until 2\n" in r.stderr
    alone = _cli("migrate", "--sql", "--since", "1", "--dsn", "nonsense", "--json")  # the --sql --json refusal first
    assert alone.exit_code == 1 and alone.stdout == "" and _json_error(alone.stderr)["code"] == "X_INVALID_ARGUMENT"
    without_until = _cli("migrate", "--sql", "--since", "1", "--dsn", "nonsense")
    assert without_until.exit_code == 1 and "  fix: jobsctl migrate --sql --since 1\n" in without_until.stderr
    said = _cli("migrate", "--sql", "--since", "1", "--until", "2", env={"JOBS_DSN": "nonsense"})
    assert said.exit_code == 0 and "-- 0002_" in said.stdout  # the environment's DSN is not a given --dsn


def test_a_dsn_flag_naming_another_storage_is_answered_with_the_command_and_a_postgres_dsn() -> None:
    r = _cli("queues", "--dsn", "redis://x", "--json")
    err = _json_error(r.stderr)
    assert r.exit_code == 1 and err["code"] == "X_NOT_IMPLEMENTED"
    assert err["fix"] == f"jobsctl queues --dsn {PG_FIX}"
    from_env = _cli("queues", "--json", env={"JOBS_DSN": "redis://x"})
    assert _json_error(from_env.stderr)["fix"] == f"export JOBS_DSN={PG_FIX}"  # there, the variable is the fix


def test_a_pending_backfills_fix_names_the_environment_given_over_jobs_env(
    app_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JOBS_ENV", "staging")
    r = _cli("backfill", "--pending", "--app", APP, "--dsn", app_dsn, "--env", "production", "--json")
    out = json.loads(r.stdout)
    assert r.exit_code == 4 and out["environment"] == "production"
    fixes = [p["error"]["fix"] for p in out["pending"]]
    assert fixes and all(f.endswith("--write --env production") for f in fixes), fixes
    here = json.loads(_cli("backfill", "--pending", "--app", APP, "--dsn", app_dsn, "--json").stdout)
    assert here["environment"] == "staging" and not any("--env" in p["error"]["fix"] for p in here["pending"])


async def test_require_applied_names_the_environment_when_it_is_not_the_default(
    app_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng = connect(app_dsn)
    try:
        for environment, tail in (("production", " --env production"), (None, "")):
            with pytest.raises(JobsError) as info:
                await BackfillControl(eng, backfill_app, environment=environment).require_applied()
            err = info.value
            assert (
                err.code == X_BACKFILL_PENDING
                and err.fix == f"jobsctl backfill accounts_email_lower --app {APP} --write{tail}"
            )
    finally:
        await eng.aclose()


@pytest.mark.parametrize("env", ["", "  "])
def test_an_empty_env_is_refused_before_connecting_with_the_commands_fix(env: str) -> None:
    r = _cli("backfill", "--pending", "--app", APP, "--dsn", NOWHERE, "--env", env, "--json")
    err = _json_error(r.stderr)
    assert r.exit_code == 1 and err["code"] == "X_INVALID_ARGUMENT", err
    assert err["fix"] == "jobsctl backfill --pending --env production" and "--env" in err["cause"]


def test_a_bulk_action_under_json_without_yes_answers_the_json_error(pg_dsn: str) -> None:
    seed(pg_dsn, JobState.DEAD, JobState.DEAD, tenant="yes-json")
    r = _cli("retry", "--all", "--filter", "tenant=yes-json", "--dsn", pg_dsn, "--json")
    assert r.exit_code == 5 and r.stdout == "", r.output
    err = _json_error(r.stderr)
    assert err["code"] == "X_INVALID_ARGUMENT" and "--yes" in err["cause"]
    assert err["fix"] == f"jobsctl retry --all -f tenant=yes-json --dsn {shlex.quote(shown_dsn(pg_dsn))} --yes --json"
    dead = json.loads(_cli("ls", "--filter", "tenant=yes-json", "--dsn", pg_dsn, "--json").stdout)
    assert [j["state"] for j in dead["items"]] == ["dead", "dead"]  # nothing changed


def test_a_children_action_under_json_without_yes_answers_the_json_error(pg_dsn: str) -> None:
    (ready,) = seed(pg_dsn, JobState.READY)
    r = _cli("cancel", ready.id, "--children", "--dsn", pg_dsn, "--json")
    assert r.exit_code == 5 and r.stdout == "", r.output
    err = _json_error(r.stderr)
    assert err["code"] == "X_INVALID_ARGUMENT" and err["fix"] == (
        f"jobsctl cancel {ready.id} --children --dsn {shlex.quote(shown_dsn(pg_dsn))} --yes --json"
    )
    assert asyncio.run(_state(pg_dsn, ready.id)) is JobState.READY


async def _state(dsn: str, job_id: str) -> JobState:
    eng = connect(dsn)
    try:
        return (await eng.aget(job_id)).state
    finally:
        await eng.aclose()
