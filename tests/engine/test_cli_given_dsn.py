"""An error's fix names the database the command was given: where the engine's fix says
"$JOBS_DSN" (X_SCHEMA_MISSING, X_SCHEMA_OUTDATED), a command given --dsn prints that DSN in its
safe form instead, never its password, so the fix run as printed acts on the database the cause
names and not on whatever $JOBS_DSN names."""

from __future__ import annotations

import json
import shlex

from typer.testing import CliRunner

from engine.cli import app
from engine.drivers.migrations import migrations
from engine.drivers.postgres.dsn import safe_dsn, shown_dsn

OTHER = "postgresql://someone@elsewhere.example/other"


def _invoke(*args: str, env: dict[str, str | None] | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args), env={"JOBS_DSN": OTHER, **(env or {})})


def test_schema_missing_fix_names_the_dsn_given_by_flag_and_running_it_migrates_that_database(
    pg_server_empty_dsn: str,
) -> None:
    r = _invoke("queues", "--dsn", pg_server_empty_dsn)
    assert r.exit_code == 1 and "error X_SCHEMA_MISSING:" in r.stderr
    fix = next(line for line in r.stderr.splitlines() if line.startswith("  fix: "))[len("  fix: ") :]
    assert fix == f"jobsctl migrate --dsn {shlex.quote(safe_dsn(pg_server_empty_dsn))}"
    words = shlex.split(fix)
    ran = _invoke(*words[1:])  # the fix as printed, $JOBS_DSN naming another database
    assert ran.exit_code == 0, ran.output
    assert _invoke("queues", "--dsn", pg_server_empty_dsn).exit_code == 0


def test_schema_outdated_fix_names_the_dsn_given_by_flag_as_json_too(pg_server_empty_dsn: str) -> None:
    from engine.schema import migrate

    migrate(pg_server_empty_dsn, target=migrations()[-2].version)
    r = _invoke("queues", "--dsn", pg_server_empty_dsn, "--json")
    err = json.loads(r.stderr)["error"]
    assert err["code"] == "X_SCHEMA_OUTDATED"
    assert err["fix"] == f"jobsctl migrate --dsn {shlex.quote(safe_dsn(pg_server_empty_dsn))}"


def test_schema_missing_fix_says_jobs_dsn_when_the_dsn_came_from_jobs_dsn(pg_server_empty_dsn: str) -> None:
    r = _invoke("queues", "--json", env={"JOBS_DSN": pg_server_empty_dsn})
    err = json.loads(r.stderr)["error"]
    assert err["code"] == "X_SCHEMA_MISSING" and err["fix"] == 'jobsctl migrate --dsn "$JOBS_DSN"'


def test_a_given_dsns_password_never_reaches_the_fix_a_placeholder_stands_for_it(pg_server_empty_dsn: str) -> None:
    secret = "s3cret-pw"
    r = _invoke("queues", "--dsn", f"{pg_server_empty_dsn} password={secret}", "--json")
    err = json.loads(r.stderr)["error"]
    assert err["code"] == "X_SCHEMA_MISSING" and secret not in r.stderr
    expected = f"{safe_dsn(pg_server_empty_dsn)} password=PASSWORD"
    assert err["fix"] == f"jobsctl migrate --dsn {shlex.quote(expected)}"


def test_a_given_dsn_with_settings_the_safe_form_leaves_out_is_shown_as_the_placeholder_dsn() -> None:
    assert shown_dsn("postgresql://app@db.example:5433/app") == "user=app host=db.example port=5433 dbname=app"
    assert shown_dsn("postgresql://app:pw@db.example/app?sslmode=require") == "DSN"
