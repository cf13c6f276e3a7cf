"""The long-running commands refuse an option that would do nothing, before the database: a
--metrics-host without --metrics-port (worker, relay, scheduler), a --metrics-port that is not
positive, --no-maintenance with what only the maintenance leader reads, and a value no setting
can take (an infinite --reindex-min-mb). Their --json covers the errors of their start too."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from engine.cli import app

DSN = ["--dsn", "postgresql://nobody@127.0.0.1:1/nowhere"]
WORKER = ["worker", "tests.engine.test_worker_app", *DSN]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ([*WORKER, "--metrics-host", "0.0.0.0"], "--metrics-host 0.0.0.0 with no --metrics-port serves nothing"),
        (["relay", *DSN, "--metrics-host", "0.0.0.0"], "--metrics-host 0.0.0.0 with no --metrics-port"),
        (
            ["scheduler", "tests.engine.test_scheduler_app", *DSN, "--metrics-port", "0"],
            "--metrics-port 0 must be positive",
        ),
        ([*WORKER, "--no-maintenance", "--retention", "3600"], "--retention set what the maintenance leader does"),
        (
            [*WORKER, "--no-maintenance", "--maintenance-interval", "2", "--vacuum-threshold", "10"],
            "--maintenance-interval, --vacuum-threshold",
        ),
        ([*WORKER, "--reindex-min-mb", "inf"], "--reindex-min-mb inf must be a positive, finite number"),
        ([*WORKER, "--reindex-interval", "-1"], "--reindex-interval -1.0 must be a positive, finite number"),
    ],
)
def test_an_option_that_would_do_nothing_is_refused_before_the_database(args: list[str], said: str) -> None:
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 1 and "error X_INVALID_ARGUMENT" in r.stderr and said in r.stderr, r.stderr


def test_no_maintenance_alone_and_index_upkeep_off_are_still_taken() -> None:
    for extra in (["--no-maintenance"], ["--reindex-interval", "0"]):
        r = CliRunner().invoke(app, [*WORKER, "--start-timeout", "0.2", *extra])
        assert "X_INVALID_ARGUMENT" not in r.stderr and "X_DB_UNREACHABLE" in r.stderr, r.stderr


@pytest.mark.parametrize(
    "command",
    [["worker", "tests.engine.test_worker_app"], ["relay"], ["scheduler", "tests.engine.test_scheduler_app"]],
    ids=["worker", "relay", "scheduler"],
)
def test_json_covers_a_long_running_commands_start_too(command: list[str]) -> None:
    """--json says errors come as JSON on stderr: the database's refusal at the start included."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    jobs = str(Path(sys.executable).parent / "jobsctl")
    args = [jobs, "--connect-timeout", "2", *command, *DSN, "--json", "--start-timeout", "0.3"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stderr.strip().splitlines()[-1])["error"]["code"] == "X_DB_UNREACHABLE"
