"""`jobsctl --read-only COMMAND` and $JOBS_READ_ONLY=1: every command that would change the database is
refused before it connects (X_READ_ONLY, a cause naming the command and the switch, the command
without the switch as the fix), reads run as before, a word $JOBS_READ_ONLY does not take is refused,
one table classifies every registered command, and the engine objects the commands build are
read-only too. All in-process, on memory:// or an address nothing answers on: a command that reached
for the database there would answer X_DB_UNREACHABLE, not the refusal."""

from __future__ import annotations

import asyncio
import json
import shlex
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from engine.cli import app
from engine.cli import read_only as ro
from engine.drivers.postgres.dsn import shown_dsn
from engine.errors import JobsError

NOWHERE = "postgresql://nobody:s3cret@127.0.0.1:1/nowhere"
ID = "01a25125-07db-7009-89b4-e1d028cd92fe"
WORKER_APP = "tests.engine.test_worker_app"
BACKFILL = ["accounts_email_lower", "--app", "tests.engine.backfill_app"]
QUICK = ["--start-timeout", "1"]  # a long-running command that got past the refusal gives up at once

# Every form that writes, by the path its refusal names, each with --dsn NOWHERE last.
WRITES: list[tuple[str, list[str]]] = [
    ("retry", ["retry", ID]),
    ("retry", ["retry", ID, "--from-step", "charge"]),
    ("cancel", ["cancel", ID]),
    ("discard", ["discard", ID, "--note", "INC-7"]),
    ("pause", ["pause", "billing", "--create"]),
    ("resume", ["resume", "billing"]),
    ("event", ["event", "approved", "--payload", '{"ok": true}']),
    ("enqueue", ["enqueue", "w.pg_work", "--app", WORKER_APP, "--input", '{"n": 1}']),
    ("workers drain", ["workers", "drain", "w-1"]),
    ("schedule pause", ["schedule", "pause", "nightly"]),
    ("schedule resume", ["schedule", "resume", "nightly"]),
    ("schedule trigger", ["schedule", "trigger", "nightly"]),
    ("backfill", ["backfill", *BACKFILL]),  # a dry-run pass: a job and a ledger row
    ("backfill", ["backfill", *BACKFILL, "--write"]),
    ("backfill", ["backfill", *BACKFILL, "--cancel"]),
    ("backfill", ["backfill", *BACKFILL, "--retry"]),
    ("migrate", ["migrate"]),
    ("install", ["install"]),
    ("worker", ["worker", WORKER_APP, *QUICK]),
    ("relay", ["relay", *QUICK]),
    ("scheduler", ["scheduler", "tests.engine.test_scheduler_app", *QUICK]),
]


@pytest.fixture(autouse=True)
def _no_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ro.READ_ONLY_ENV, raising=False)
    monkeypatch.setenv("BACKFILL_APP_DSN", NOWHERE)  # the backfill app's own database: nothing answers


def jobsctl(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> Any:  # noqa: A002
    return CliRunner().invoke(app, list(args), env=env, input=input)


def _error(r: Any) -> dict[str, str]:
    said = r.stderr.splitlines()
    assert said[0].startswith("error ") and said[1].startswith("  fix: "), r.output
    code, _, cause = said[0].removeprefix("error ").partition(": ")
    return {"code": code, "cause": cause, "fix": said[1].removeprefix("  fix: ")}


def _typed(args: list[str]) -> str:
    """The command as a fix repeats it: the DSN without its password."""
    return shlex.join(["jobsctl", *args[:-1], shown_dsn(args[-1])])


@pytest.mark.parametrize("path, args", WRITES, ids=[" ".join(a[:1] + a[2:3]) for _, a in WRITES])
def test_every_writing_command_is_refused_under_the_flag_before_it_connects(path: str, args: list[str]) -> None:
    args = [*args, "--dsn", NOWHERE]
    r = jobsctl("--read-only", *args)
    assert r.exit_code == 1 and r.stdout == "", r.output
    err = _error(r)
    assert err["code"] == "X_READ_ONLY", err
    assert err["cause"].startswith(f"read-only (--read-only was given): `jobsctl {path}` would ")
    assert err["cause"].endswith("; nothing was changed")
    assert err["fix"] == _typed(args)  # the same command without --read-only
    assert "s3cret" not in r.stderr


@pytest.mark.parametrize("path, args", WRITES, ids=[" ".join(a[:1] + a[2:3]) for _, a in WRITES])
def test_every_writing_command_is_refused_under_the_variable_as_json(path: str, args: list[str]) -> None:
    args = [*args, "--json", "--dsn", NOWHERE]
    r = jobsctl(*args, env={ro.READ_ONLY_ENV: "TRUE"})
    assert r.exit_code == 1 and r.stdout == "", r.output
    err = json.loads(r.stderr)["error"]
    assert err["code"] == "X_READ_ONLY", err
    assert err["cause"].startswith(f"read-only (JOBS_READ_ONLY=TRUE is set): `jobsctl {path}` would ")
    assert err["fix"] == f"JOBS_READ_ONLY=0 {_typed(args)}"


def test_the_flag_and_the_variable_together_are_both_named_and_both_undone() -> None:
    r = jobsctl("--read-only", "pause", "billing", "--dsn", "memory://", env={ro.READ_ONLY_ENV: "on"})
    err = _error(r)
    assert err["cause"].startswith("read-only (--read-only was given and JOBS_READ_ONLY=on is set): `jobsctl pause`")
    assert err["fix"] == "JOBS_READ_ONLY=0 jobsctl pause billing --dsn memory://"


@pytest.mark.parametrize("switch", [["--read-only"], []], ids=["flag", "variable"])
def test_the_fix_run_as_printed_does_what_was_refused(switch: list[str]) -> None:
    env = None if switch else {ro.READ_ONLY_ENV: "1"}
    r = jobsctl(*switch, "--connect-timeout", "3", "pause", "billing", "--create", "--dsn", "memory://", env=env)
    err = _error(r)
    assert err["code"] == "X_READ_ONLY"
    # The root's own options stay; memory:// times no connection, so the fix's run refuses that (its own answer).
    assert err["fix"].endswith("jobsctl --connect-timeout 3 pause billing --create --dsn memory://")
    words = shlex.split(err["fix"])
    assert words[: words.index("jobsctl")] == ([] if switch else ["JOBS_READ_ONLY=0"])
    run = [w for w in words[words.index("jobsctl") + 1 :] if w not in ("--connect-timeout", "3")]
    done = jobsctl(*run, env={ro.READ_ONLY_ENV: "0"} if not switch else None)
    assert done.exit_code == 0 and "queue billing: paused" in done.stdout, done.output


@pytest.mark.parametrize(
    "args",
    [
        ["queues"],
        ["ls", "-f", "state=dead"],
        ["dead"],
        ["workers"],
        ["schedule"],
        ["outbox"],
        ["audit", "--action", "queue.pause"],
        ["retry", "--all", "-f", "state=dead", "--yes"],  # its dry run: nothing matches here, exit 5
        ["describe", "--app", WORKER_APP],
        ["migrate", "--sql", "--since", "1", "--until", "1"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
@pytest.mark.parametrize("switch", ["flag", "variable"])
def test_reads_and_dry_runs_work_as_before_under_the_switch(args: list[str], switch: str) -> None:
    dsn = [] if args[0] in ("describe", "migrate") else ["--dsn", "memory://"]
    plain = jobsctl(*args, *dsn)
    read = jobsctl(*(["--read-only"] if switch == "flag" else []), *args, *dsn, env={ro.READ_ONLY_ENV: "yes"})
    assert read.exit_code == plain.exit_code and read.exit_code in (0, 5), read.output
    assert read.stdout == plain.stdout and "X_READ_ONLY" not in read.stderr


@pytest.mark.parametrize("word", ["1", "TRUE", "Yes", "on"])
def test_each_word_for_on_makes_the_shell_read_only(word: str) -> None:
    r = jobsctl("pause", "billing", "--create", "--dsn", "memory://", env={ro.READ_ONLY_ENV: word})
    assert r.exit_code == 1 and _error(r)["code"] == "X_READ_ONLY", r.output


@pytest.mark.parametrize("word", ["0", "false", "NO", "Off", ""])
def test_each_word_for_off_leaves_the_shell_writable(word: str) -> None:
    r = jobsctl("pause", "billing", "--create", "--dsn", "memory://", env={ro.READ_ONLY_ENV: word})
    assert r.exit_code == 0 and "queue billing: paused" in r.stdout, r.output


@pytest.mark.parametrize("word", ["maybe", "2", "y", "read-only"])
def test_a_word_the_variable_does_not_take_is_refused_whatever_the_command(word: str) -> None:
    for args in (["queues", "--dsn", "memory://"], ["--read-only", "queues", "--dsn", "memory://"]):
        r = jobsctl(*args, env={ro.READ_ONLY_ENV: word})
        assert r.exit_code == 1 and r.stdout == "", r.output
        err = _error(r)
        assert err["code"] == "X_INVALID_ARGUMENT"
        assert err["cause"].startswith(f"JOBS_READ_ONLY={word!r} is not a switch: on is 1, true, yes or on;")
        assert err["fix"] == "export JOBS_READ_ONLY=1"
    as_json = jobsctl("queues", "--dsn", "memory://", "--json", env={ro.READ_ONLY_ENV: word})
    assert json.loads(as_json.stderr)["error"]["code"] == "X_INVALID_ARGUMENT" and as_json.exit_code == 1


def test_the_help_says_what_read_only_does() -> None:
    r = jobsctl("--help", env={"COLUMNS": "300"})
    assert r.exit_code == 0
    [line] = [ln for ln in r.stdout.splitlines() if "--read-only" in ln]
    assert "refuse every command that would change the database" in line
    assert "reads and dry runs work as before" in line and "$JOBS_READ_ONLY=1" in line


def _registered() -> Any:
    return typer.main.get_command(app)


def test_every_registered_command_is_classified_as_reading_or_writing() -> None:
    paths = [path for path, _ in ro.commands(_registered())]
    assert ro.unclassified(_registered()) == []
    assert sorted(set(ro.COMMANDS) - set(paths)) == []  # no entry for a command that is gone


def test_a_command_left_out_of_the_table_is_found_and_refused_as_a_write(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(ro.COMMANDS, "queues")
    assert ro.unclassified(_registered()) == ["queues"]
    r = jobsctl("--read-only", "queues", "--dsn", "memory://")
    assert r.exit_code == 1 and _error(r)["code"] == "X_READ_ONLY", r.output
    assert "`jobsctl queues` is not known to only read" in r.stderr


def test_the_engine_objects_the_commands_build_refuse_a_change_too() -> None:
    from engine.api import connect
    from engine.backfills import BackfillControl
    from engine.cli.acting import operator
    from engine.cli.backfill import _control
    from engine.cli.schedule import _schedules
    from tests.engine import backfill_app

    eng = connect("memory://")
    try:
        ro.set_read_only(True, None, ["pause", "billing"], as_json=False)
        ops, tasks = operator(eng, "alice"), _schedules(eng, "alice")
        ctl = _control(eng, BackfillControl(eng, backfill_app).catalog, "alice")
        assert (ops.read_only, tasks.read_only, ctl.read_only) == (True, True, True)
        with pytest.raises(JobsError) as refused:
            asyncio.run(ops.pause("billing", create=True))
        assert (refused.value.code, refused.value.fix) == ("X_READ_ONLY", "jobsctl pause billing")
        ro.reset_read_only()
        assert not operator(eng, "alice").read_only  # out of read-only mode, as every invocation starts
    finally:
        ro.reset_read_only()
        eng.close()
