"""`jobs install`: the one install point from the command line, re-runnable (I3)."""

from __future__ import annotations

import json

import psycopg
from typer.testing import CliRunner

from engine.cli import app

runner = CliRunner()


def test_i3_jobs_install_twice_is_a_noop(pg_server_empty_dsn: str) -> None:
    first = runner.invoke(app, ["install", "--dsn", pg_server_empty_dsn])
    second = runner.invoke(app, ["install", "--dsn", pg_server_empty_dsn])
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    assert "jobs schema installed" in second.output
    with psycopg.connect(pg_server_empty_dsn) as conn:
        n = conn.execute("select count(*) from pg_tables where schemaname = 'jobs'").fetchone()
    assert n is not None and n[0] >= 10


def test_install_takes_the_dsn_from_the_environment(pg_server_empty_dsn: str) -> None:
    r = runner.invoke(app, ["install"], env={"JOBS_DSN": pg_server_empty_dsn})
    assert r.exit_code == 0, r.output


def test_install_without_a_dsn_says_how_to_give_one() -> None:
    r = runner.invoke(app, ["install", "--json"], env={"JOBS_DSN": ""})
    assert r.exit_code == 1
    err = json.loads(r.stderr)["error"]
    assert err["code"] == "X_DSN_INVALID" and err["fix"].startswith("export JOBS_DSN=")


def test_install_on_an_unreachable_server_never_prints_the_password() -> None:
    r = runner.invoke(app, ["install", "--dsn", "postgresql://app:s3cret@127.0.0.1:1/appdb?connect_timeout=2"])
    assert r.exit_code == 1
    assert "X_DB_UNREACHABLE" in r.stderr and "appdb" in r.stderr
    assert "s3cret" not in r.output + r.stderr
