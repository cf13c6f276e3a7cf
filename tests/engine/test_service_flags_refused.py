"""`jobsctl relay` and `jobsctl scheduler` refuse a bad flag before the database in the words of
the command line: the cause names the flag as typed, and the fix is the command to run, not the
Python config that checked it."""

from __future__ import annotations

import shlex

import pytest
from typer.testing import CliRunner

from engine.cli import app

NOWHERE = ["--dsn", "postgresql://nobody@127.0.0.1:1/nowhere"]
APP = "tests.engine.backfill_app"


@pytest.mark.parametrize(
    ("args", "cause", "fix"),
    [
        (
            ["relay", "--batch-size", "0"],
            "--batch-size 0 must be a whole number >= 1",
            "jobsctl relay --batch-size 250",
        ),
        (
            ["relay", "--poll-interval", "-1"],
            "--poll-interval -1.0 must be a finite number of seconds > 0",
            "jobsctl relay --poll-interval 1.0",
        ),
        (
            ["scheduler", APP, "--interval", "0"],
            "--interval 0.0 must be a finite number of seconds > 0",
            f"jobsctl scheduler {APP} --interval 30",
        ),
        (
            ["scheduler", APP, "--interval", "60", "--lease-seconds", "10"],
            "--interval 60 is not shorter than --lease-seconds 10",
            f"jobsctl scheduler {APP} --interval",
        ),
    ],
)
def test_a_relay_or_scheduler_flag_out_of_range_is_refused_as_the_flag_with_a_command_line_fix(
    args: list[str], cause: str, fix: str
) -> None:
    r = CliRunner().invoke(app, [*args, *NOWHERE])
    assert r.exit_code == 1, r.output
    lines = r.stderr.splitlines()
    assert lines[0].startswith("error X_INVALID_ARGUMENT: " + cause), r.stderr
    said_fix = lines[1].removeprefix("  fix: ")
    assert said_fix.startswith(fix) and "Config(" not in r.stderr
    assert "X_DB_UNREACHABLE" not in r.stderr  # refused before any connection
    words = shlex.split(said_fix)
    assert words[0] == "jobsctl" and words[1] == args[0]
