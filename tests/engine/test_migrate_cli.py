"""`jobsctl migrate` (and `jobsctl install`, its alias): apply, --status, --sql, from the command line."""

from __future__ import annotations

import json

import psycopg
from typer.testing import CliRunner

from engine.cli import app
from engine.drivers.migrations import migrations

runner = CliRunner()
LABELS = [m.label for m in migrations()]


def test_jobs_migrate_prints_what_it_applied_and_twice_is_a_noop(pg_server_empty_dsn: str) -> None:
    first = runner.invoke(app, ["migrate", "--dsn", pg_server_empty_dsn])
    second = runner.invoke(app, ["migrate", "--dsn", pg_server_empty_dsn])
    assert first.exit_code == 0 and second.exit_code == 0, first.output + second.output
    assert [line.split()[1] for line in first.output.splitlines() if line.startswith("applied ")] == LABELS
    assert f"{len(LABELS)} migration(s) applied" in first.output
    assert "nothing to apply" in second.output and "applied 0" not in second.output
    with psycopg.connect(pg_server_empty_dsn) as conn:
        n = conn.execute("select count(*) from pg_tables where schemaname = 'jobs'").fetchone()
    assert n is not None and n[0] >= 10


def test_jobs_install_is_an_alias_of_jobs_migrate(pg_server_empty_dsn: str) -> None:
    r = runner.invoke(app, ["install", "--json"], env={"JOBS_DSN": pg_server_empty_dsn})
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["applied"] == LABELS


def test_jobs_migrate_status_lists_applied_and_pending(pg_server_empty_dsn: str) -> None:
    dsn = pg_server_empty_dsn
    before = json.loads(runner.invoke(app, ["migrate", "--status", "--json", "--dsn", dsn]).stdout)
    assert [(r["name"], r["state"]) for r in before["migrations"]] == [(m.name, "pending") for m in migrations()]
    assert before["pending"] == [m.version for m in migrations()] and "password" not in before["database"]
    from engine.schema import migrate

    migrate(dsn, target=1)
    text = runner.invoke(app, ["migrate", "--status", "--dsn", dsn])
    assert text.exit_code == 0, text.output
    lines = text.output.splitlines()
    assert lines[1].split()[:3] == [LABELS[0], "applied", "migrate"]
    assert lines[2].split() == [LABELS[1], "pending"]
    assert lines[-1] == f"{len(LABELS) - 1} pending: run `jobsctl migrate`"


def test_jobs_migrate_sql_prints_the_pending_sql_with_its_recording(pg_server_empty_dsn: str) -> None:
    dsn = pg_server_empty_dsn
    from engine.schema import migrate

    migrate(dsn, target=1)
    r = runner.invoke(app, ["migrate", "--sql", "--dsn", dsn])
    assert r.exit_code == 0, r.output
    assert f"-- {LABELS[1]}" in r.output and f"-- {LABELS[0]}" not in r.output
    assert "insert into jobs.migration" in r.output and "'sql'" in r.output
    assert "begin" not in r.output.lower().split("do $$")[0]  # the caller's tool owns the transaction
    with psycopg.connect(dsn) as conn:
        conn.execute(r.output)
    status = json.loads(runner.invoke(app, ["migrate", "--status", "--json", "--dsn", dsn]).stdout)
    assert status["pending"] == [] and [r["method"] for r in status["migrations"]] == ["migrate"] + ["sql"] * (
        len(LABELS) - 1
    )


def test_jobs_migrate_sql_since_reads_no_database() -> None:
    r = runner.invoke(app, ["migrate", "--sql", "--since", "1"], env={"JOBS_DSN": ""})
    assert r.exit_code == 0, r.output
    assert f"-- {LABELS[-1]}" in r.output and f"-- {LABELS[0]}" not in r.output
    pinned = runner.invoke(app, ["migrate", "--sql", "--since", "0", "--until", "1"], env={"JOBS_DSN": ""})
    assert f"-- {LABELS[0]}" in pinned.output and f"-- {LABELS[1]}" not in pinned.output
    refused = runner.invoke(app, ["migrate", "--since", "1", "--json"], env={"JOBS_DSN": ""})
    assert refused.exit_code == 1 and json.loads(refused.stderr)["error"]["code"] == "X_INVALID_ARGUMENT"


def test_migrate_without_a_dsn_says_how_to_give_one() -> None:
    r = runner.invoke(app, ["migrate", "--json"], env={"JOBS_DSN": ""})
    assert r.exit_code == 2  # a usage error, as every X_DSN_INVALID
    err = json.loads(r.stderr)["error"]
    assert err["code"] == "X_DSN_INVALID" and err["fix"].startswith("export JOBS_DSN=")


def test_migrate_on_an_unreachable_server_never_prints_the_password() -> None:
    r = runner.invoke(app, ["migrate", "--dsn", "postgresql://app:s3cret@127.0.0.1:1/appdb?connect_timeout=2"])
    assert r.exit_code == 1
    assert "X_DB_UNREACHABLE" in r.stderr and "appdb" in r.stderr
    assert "s3cret" not in r.output + r.stderr


def test_sql_with_json_is_refused_the_script_has_no_json_form() -> None:
    r = runner.invoke(app, ["migrate", "--sql", "--since", "1", "--json"])
    assert r.exit_code == 1 and '"X_INVALID_ARGUMENT"' in r.stderr and "--sql prints a SQL script" in r.stderr
