"""A `jobsctl backfill` refusal's fix, typed as it stands, is not refused in turn: where the first of
the modes given is --pending or --status (each lists every backfill and takes no name), the fix
drops the name, as `jobsctl backfill NAME --pending` alone is refused for naming one."""

from __future__ import annotations

import shlex

import pytest
from typer.testing import CliRunner

from engine.cli import app

APP = ["--app", "tests.engine.backfill_app", "--dsn", "postgresql://nobody@127.0.0.1:1/nowhere"]
NAME = "accounts_email_lower"


def _fix(args: list[str]) -> str:
    r = CliRunner().invoke(app, ["backfill", *args, *APP])
    assert r.exit_code == 1 and "error X_INVALID_ARGUMENT" in r.stderr, r.stderr
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("  fix: ")]
    return line.removeprefix("  fix: ")


@pytest.mark.parametrize(
    "args",
    [
        [NAME, "--pending", "--cancel"],
        [NAME, "--status", "--history"],
        [NAME, "--status", "--write"],
        [NAME, "--pending", "--wait"],
        [NAME, "--status", "--timeout", "5m"],
        [NAME, "--history", "--cancel"],
        [NAME, "--cancel", "--wait"],
    ],
)
def test_a_backfill_refusals_fix_run_as_typed_is_not_refused_again(args: list[str]) -> None:
    fix = _fix(args)
    again = CliRunner().invoke(app, [*shlex.split(fix)[1:], *APP])
    assert "X_INVALID_ARGUMENT" not in again.stderr, (fix, again.stderr)
    assert "X_DB_UNREACHABLE" in again.stderr  # past every refusal, on to the database it cannot reach
