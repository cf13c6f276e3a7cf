"""`jobs-console` on bad input: each mistake is answered as code, cause and a one-line fix on
stderr, with a non-zero exit, before the terminal is taken over, and never with the password."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from console.cli import EXIT_ERROR, EXIT_USAGE, app, parse_refresh, password_of, scrub
from engine.drivers.postgres.dsn import safe_dsn
from engine.errors import JobsError

SECRET = "s3cr3t-Pa55"


def run(*args: str, env: dict[str, str | None] | None = None):  # type: ignore[no-untyped-def]
    return CliRunner(env={"JOBS_DSN": None, **(env or {})}).invoke(app, list(args))


def assert_clear_error(result, code: str, exit_code: int, fix: str) -> None:  # type: ignore[no-untyped-def]
    assert result.exit_code == exit_code, result.output
    err = result.stderr
    assert err.startswith(f"error {code}: "), err
    fix_line = next(line for line in err.splitlines() if line.startswith("  fix: "))
    assert fix in fix_line
    assert SECRET not in result.output and SECRET not in err


def test_no_dsn_and_no_env_names_the_option() -> None:
    r = run()
    assert_clear_error(r, "X_DSN_INVALID", EXIT_USAGE, "jobs-console --dsn postgresql://")
    assert "$JOBS_DSN is not set" in r.stderr


def test_an_empty_dsn_is_refused() -> None:
    assert_clear_error(run("--dsn", "  "), "X_DSN_INVALID", EXIT_USAGE, "jobs-console --dsn")


def test_a_memory_dsn_is_refused_for_the_demo() -> None:
    assert_clear_error(run("--dsn", "memory://"), "X_DSN_INVALID", EXIT_USAGE, "jobs-console demo")


def test_a_dsn_given_to_the_demo_is_refused_not_ignored() -> None:
    # The demo runs on its own throwaway database: a --dsn would be silently ignored.
    r = run("--dsn", f"postgresql://bob:{SECRET}@db.example/app", "demo")
    assert_clear_error(r, "X_INVALID_ARGUMENT", EXIT_USAGE, "jobs-console demo")
    assert "--dsn was given to the demo" in r.stderr
    assert (
        run("demo", "--help", env={"JOBS_DSN": "postgresql://bob@db.example/app"}).exit_code == 0
    )  # $JOBS_DSN is no --dsn


@pytest.mark.parametrize(
    "dsn",
    [
        f"postgresql://bob:{SECRET}@db.example:notaport/app",
        f"postgresql://bob:{SECRET}@db.example/app?port=99999",
        f"host=db.example password={SECRET} port=x5432",
        f"user=bob password={SECRET} nonsense",
        f"user=bob password='{SECRET}",
    ],
)
def test_a_malformed_dsn_is_refused_without_its_password(dsn: str) -> None:
    assert_clear_error(run("--dsn", dsn), "X_DSN_INVALID", EXIT_USAGE, "jobs-console --dsn postgresql://")


def test_the_dsn_comes_from_the_environment_too() -> None:
    r = run(env={"JOBS_DSN": f"postgresql://bob:{SECRET}@db.example:notaport/app"})
    assert_clear_error(r, "X_DSN_INVALID", EXIT_USAGE, "jobs-console --dsn")


def test_an_unreachable_database_is_named_without_the_password(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # A socket directory with no server in it: refused at once, no network involved.
    dsn = f"postgresql://bob:{SECRET}@/app?host={tmp_path}&port=5999&connect_timeout=2"
    r = run("--dsn", dsn)
    assert_clear_error(r, "X_DB_UNREACHABLE", EXIT_ERROR, "psql")
    assert "could not connect to database app" in r.stderr


def test_an_uninstalled_schema_names_jobs_install(pg_server_empty_dsn: str) -> None:
    assert_clear_error(run("--dsn", pg_server_empty_dsn), "X_SCHEMA_MISSING", EXIT_ERROR, "jobsctl migrate --dsn")


def test_an_uninstalled_schemas_fix_names_the_database_given_by_dsn_not_jobs_dsns(pg_server_empty_dsn: str) -> None:
    other = "postgresql://someone@elsewhere.example/other"
    r = run("--dsn", pg_server_empty_dsn, env={"JOBS_DSN": other})
    fix = f"jobsctl migrate --dsn {shlex.quote(safe_dsn(pg_server_empty_dsn))}"
    assert_clear_error(r, "X_SCHEMA_MISSING", EXIT_ERROR, fix)
    assert "$JOBS_DSN" not in r.stderr


@pytest.mark.parametrize("value", ["fast", "2 hours", "0s", "10ms", "2h", "-1s", ""])
def test_a_bad_refresh_is_refused_before_anything_connects(value: str) -> None:
    r = run("--refresh", value, "--dsn", f"postgresql://bob:{SECRET}@/app?host=/nonexistent")
    assert_clear_error(r, "X_INVALID_ARGUMENT", EXIT_USAGE, "jobs-console --refresh 2s")


@pytest.mark.parametrize(("text", "seconds"), [("2s", 2.0), ("500ms", 0.5), ("1m", 60.0), ("3", 3.0), (" 1.5s ", 1.5)])
def test_refresh_values(text: str, seconds: float) -> None:
    assert parse_refresh(text) == seconds


def test_refresh_bounds_are_part_of_the_message() -> None:
    with pytest.raises(JobsError, match="between 0.25s and 1h"):
        parse_refresh("2h")


@pytest.mark.parametrize(
    ("dsn", "password"),
    [
        ("postgresql://bob:pw%40x@h/db", "pw%40x"),
        ("postgresql://bob:pw@h:notaport/db", "pw"),
        ("postgresql://bob@h/db", None),
        ("host=h password='a b\\' c' user=x", "a b\\' c"),
        ("host=h password=plain user=x", "plain"),
        ("host=h user=x", None),
    ],
)
def test_the_password_is_found_in_every_dsn_form(dsn: str, password: str | None) -> None:
    assert password_of(dsn) == password


def test_scrub_removes_raw_and_decoded_passwords() -> None:
    dsn = "postgresql://bob:pw%40x@h/db"
    assert scrub("failed for pw%40x and pw@x", dsn) == "failed for *** and ***"


def test_the_installed_entry_point_answers_too() -> None:
    # The real console script (pyproject's [project.scripts]) resolves to this CLI.
    done = subprocess.run(
        [sys.executable, "-c", "from console.cli import main; main()", "--refresh", "x"],
        capture_output=True,
        text=True,
        env={"PATH": "", "PYTHONPATH": "."},
        timeout=60,
    )
    assert done.returncode == EXIT_USAGE
    assert done.stderr.startswith("error X_INVALID_ARGUMENT")


def test_version_and_help_whose_flags_take_no_bool() -> None:
    from importlib.metadata import version

    r = run("--version")
    assert r.exit_code == 0 and r.stdout.strip() == f"jobs-console {version('jobs')}"
    for args in (["--help"], ["demo", "--help"]):
        r = run(*args)
        assert r.exit_code == 0 and "<bool>" not in r.output and "--read-only" in run("--help").output
