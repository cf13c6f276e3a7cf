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


def test_discard_with_an_id_refuses_yes_as_answering_no_question_and_discards_without_asking(pg_dsn: str) -> None:
    """`jobsctl discard ID` asks nothing, as `retry ID` and `cancel ID` do: --yes there would answer no
    question, so it is refused naming the confirmation it belongs to (--all's: discard has no
    --children) and the command to run, and the job stays as it was."""
    import asyncio

    from engine.clock import SystemClock
    from engine.drivers.postgres import PostgresDriver
    from engine.ids import IdFactory
    from engine.testing import make_job
    from engine.types import JobState

    async def dead_job() -> str:
        d = PostgresDriver(pg_dsn)
        clock = SystemClock()
        try:
            return (await make_job(d, IdFactory(clock), clock.now(), state=JobState.DEAD)).id
        finally:
            await d.close()

    job_id = asyncio.run(dead_job())
    r = jobs("discard", job_id, "--yes", "--dsn", pg_dsn, "--json")
    err = json.loads(r.stderr)["error"]
    assert r.exit_code == 1 and err["code"] == "X_INVALID_ARGUMENT"
    assert err["cause"] == (
        "--yes skips the confirmation of --all; `jobsctl discard ID` acts at once and asks none; "
        "with a job's id it would do nothing"
    )
    assert err["fix"] == f"jobsctl discard {job_id}"
    assert json.loads(jobs("show", job_id, "--dsn", pg_dsn, "--json").stdout)["job"]["state"] == "dead"
    done = jobs(*err["fix"].split()[1:], "--dsn", pg_dsn)  # the fix, no answer on stdin: none is asked
    assert done.exit_code == 0 and f"discard {job_id}: done" in done.stdout, done.output
