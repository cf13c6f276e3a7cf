"""A group's options given before its subcommand's name are the subcommand's: `jobsctl workers --dsn X
--json drain ID` drains on X and answers in JSON, as `jobsctl workers drain ID --dsn X --json` does;
an option of the group that the subcommand cannot use (the list's --budget) is refused, and two
different --dsn, one each side of the name, are refused rather than one silently winning; and what
only --all reads (--filter, --rate; --yes without --children) is refused with a job's id."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from engine.cli import app

UNREACHABLE = "postgresql://nobody@127.0.0.1:1/nowhere?connect_timeout=2"


def jobs(*args: str):  # type: ignore[no-untyped-def]
    # $JOBS_DSN names another database: the command must not fall back on it.
    return CliRunner().invoke(app, list(args), env={"JOBS_DSN": "memory://"})


def test_a_groups_dsn_and_json_before_the_subcommand_are_the_subcommands() -> None:
    for args in (
        ["workers", "--dsn", UNREACHABLE, "--json", "drain", "w1"],
        ["schedule", "--dsn", UNREACHABLE, "--json", "trigger", "t"],
    ):
        r = jobs(*args)
        assert r.exit_code == 1, r.output
        assert json.loads(r.stderr)["error"]["code"] == "X_DB_UNREACHABLE"  # on the given DSN, not $JOBS_DSN's
    r = jobs("schedule", "--json", "pause", "nightly")  # the group's --json alone
    assert json.loads(r.stderr)["error"]["code"] == "X_UNKNOWN_TASK"


def test_a_groups_option_its_subcommand_cannot_use_is_refused() -> None:
    r = jobs("workers", "--budget", "3", "drain", "w1")
    assert r.exit_code == 1 and "error X_INVALID_ARGUMENT: --budget" in r.stderr and "drain" in r.stderr


def test_two_different_dsns_either_side_of_the_subcommand_are_refused() -> None:
    r = jobs("schedule", "--dsn", "memory://", "resume", "nightly", "--dsn", UNREACHABLE)
    assert r.exit_code == 1 and "--dsn is given twice" in r.stderr and "X_INVALID_ARGUMENT" in r.stderr


def test_what_only_all_reads_is_refused_with_a_jobs_id() -> None:
    for args, flag in (
        (["retry", "abc123", "--filter", "queue=billing"], "--filter"),
        (["cancel", "abc123", "--rate", "5"], "--rate"),
        (["retry", "abc123", "--children", "--rate", "5"], "--rate"),
        (["discard", "abc123", "--yes"], "--yes"),
    ):
        r = jobs(*args)
        assert r.exit_code == 1 and f"error X_INVALID_ARGUMENT: {flag}" in r.stderr, (args, r.stderr)
    assert "X_NOT_FOUND" in jobs("cancel", "abc123", "--children", "--yes").stderr  # --yes with --children: read
