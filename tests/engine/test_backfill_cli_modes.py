"""`jobsctl backfill` refuses a combination of which a part would be dropped, before the database:
two commands at once (--history --cancel), a start's flags on another command (--cancel --write),
--force without --write (a dry run is never refused), --wait on what starts no pass, a name
given to the lists of every backfill (--pending, --status), and --actor on a read, which records
no actor."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from engine.cli import app

APP = ["--app", "tests.engine.backfill_app", "--dsn", "postgresql://nobody@127.0.0.1:1/nowhere"]
NAME = "accounts_email_lower"


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--history", "--cancel"], "--history and --cancel are each a command of their own"),
        (["--cancel", "--write"], "--write starts a pass; --cancel starts none"),
        (["--retry", "--write", "--force"], "--write and --force start a pass"),
        (["--force"], "--force reruns an applied backfill's write pass"),
        (["--cancel", "--wait"], "--wait follows a pass that starts or continues"),
        (["--status"], "--status lists every backfill; the name"),
        (["--pending"], "--pending lists every backfill; the name"),
        (["--history", "--actor", "ann"], "--actor names who starts, cancels or retries a pass; --history only reads"),
    ],
)
def test_a_backfill_command_whose_part_would_be_dropped_is_refused_before_the_database(
    flags: list[str], said: str
) -> None:
    r = CliRunner().invoke(app, ["backfill", NAME, *APP, *flags])
    assert r.exit_code == 1 and "error X_INVALID_ARGUMENT" in r.stderr and said in r.stderr, r.stderr
    assert "X_DB_UNREACHABLE" not in r.stderr  # refused before any connection


@pytest.mark.parametrize("flags", [["--status"], ["--pending"], []])
def test_actor_on_a_list_of_every_backfill_is_refused_as_recording_nothing(flags: list[str]) -> None:
    r = CliRunner().invoke(app, ["backfill", *APP, *flags, "--actor", "ann"])
    assert r.exit_code == 1 and "--actor names who starts, cancels or retries a pass" in r.stderr, r.stderr
    assert "X_DB_UNREACHABLE" not in r.stderr
