"""What `jobs` says about itself and how its tables read: every option has help, each command's
summary is one line, a flag is not shown as taking a `<bool>`, `--version` answers, `jobsctl dead`
clips the last error at a word with an ellipsis on one line, and every column of `jobsctl workers`
has a header."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import typer
from typer.testing import CliRunner

from engine.cli import app
from engine.cli.reads import clip
from engine.clock import SystemClock
from engine.drivers.postgres import PostgresDriver
from engine.ids import IdFactory
from engine.testing import Factory
from engine.types import JobState

runner = CliRunner()


def commands() -> list[tuple[str, typer.core.TyperCommand]]:  # type: ignore[name-defined]
    out = []

    def walk(cmd, path: str) -> None:  # type: ignore[no-untyped-def]
        out.append((path, cmd))
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(typer.main.get_command(app), "jobs")
    return out


def test_every_option_of_every_command_says_what_it_does() -> None:
    missing = [
        f"{path} {'/'.join(p.opts)}"
        for path, cmd in commands()
        for p in cmd.params
        if p.param_type_name == "option" and not (getattr(p, "help", None) or "").strip()
    ]
    assert missing == []


def test_every_commands_summary_is_one_line_in_the_command_list() -> None:
    # The list of commands shows each one's first paragraph with its line breaks kept: a summary
    # wrapped in the source reads as a broken line there. Details go after a blank line.
    broken = [path for path, cmd in commands() if "\n" in (cmd.help or "").strip().split("\n\n")[0]]
    assert broken == []


def test_no_flag_is_shown_as_taking_a_bool() -> None:
    for path, _ in commands():
        r = runner.invoke(app, [*path.split()[1:], "--help"], env={"COLUMNS": "120"})
        assert r.exit_code == 0, (path, r.output)
        assert "<bool>" not in r.output, path


def test_a_filter_key_typed_as_an_option_answers_how_to_write_the_filter() -> None:
    """`jobsctl ls --state dead` is how other CLIs filter: ours says `-f state=dead`, on every
    command that filters; any other unknown option keeps click's answer."""
    runner = CliRunner()
    cases = [
        (["ls", "--state", "dead"], "--state", "-f state=dead"),
        (["dead", "--queue=billing"], "--queue", "-f queue=billing"),
        (["retry", "--all", "--name", "--yes"], "--name", "-f name=VALUE"),
        (["cancel", "--all", "--input.order", "42"], "--input.order", "-f input.order=42"),
        (["discard", "--all", "--code", "X_GONE"], "--code", "-f code=X_GONE"),
    ]
    for args, option, hint in cases:
        r = runner.invoke(app, args, env={"COLUMNS": "200"})
        assert r.exit_code == 2 and f"No such option: {option}; filters are {hint} (--filter, repeatable)" in r.output
    r = runner.invoke(app, ["ls", "--bogus"], env={"COLUMNS": "200"})
    assert r.exit_code == 2 and "No such option: --bogus" in r.output and "filters are" not in r.output


def test_version_prints_the_installed_version() -> None:
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.stdout.strip() == f"jobs {version('jobs')}"


def test_clip_cuts_at_a_word_with_an_ellipsis_on_one_line() -> None:
    text = "X_SMTP_TIMEOUT: smtp.example.com:587 did not answer in 30s\n  while sending receipt ord-981 [stop: x]"
    clipped = clip(text, 60)
    assert clipped == "X_SMTP_TIMEOUT: smtp.example.com:587 did not answer in 30s…"
    assert len(clip(text, 40)) <= 40 and clip(text, 40).endswith("587…") and "\n" not in clip(text, 200)
    assert clip("short", 60) == "short"


def test_dead_and_workers_tables_at_80_columns(pg_dsn: str) -> None:
    async def seed() -> None:
        d = PostgresDriver(pg_dsn)
        clock = SystemClock()
        f = Factory(d, IdFactory(clock), clock)
        job = await f.job(JobState.READY, name="send_receipt")
        claim = await f.claim(job.id)
        error = "X_SMTP_TIMEOUT: the mail server did not answer in 30 seconds while we sent the receipt"
        await f.nack(claim, "dead", error=error, error_code="X_SMTP_TIMEOUT", stop_reason="attempts-exhausted")
        await f.worker("w-app1", host="app-1", pid=4242, queues=("default",), concurrency=4)
        await d.close()

    asyncio.run(seed())
    r = runner.invoke(app, ["dead", "--dsn", pg_dsn], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    rows = [line for line in r.stdout.splitlines() if line.startswith("│")]
    assert len(rows) == 1, r.stdout  # one line for the one group: nothing wrapped onto a second
    error = rows[0].rstrip(" │").rsplit("│", 1)[1].strip()
    full = "the mail server did not answer in 30 seconds while we sent the receipt"
    # Cut after a whole word (the code's prefix is not repeated: the code has its column).
    assert error.endswith("…") and (full + " ").startswith(error[:-1] + " "), r.stdout
    wide = runner.invoke(app, ["dead", "--dsn", pg_dsn], env={"COLUMNS": "200"}).stdout
    assert full in wide, wide
    r = runner.invoke(app, ["workers", "--dsn", pg_dsn], env={"COLUMNS": "120"})
    header = next(line for line in r.stdout.splitlines() if "heartbeat" in line)
    cells = [c.strip() for c in header.strip("┃│ ").split("┃")]
    assert all(cells) and cells[-1] == "state", header
    assert "live" in r.stdout


def test_the_cli_is_installed_as_jobsctl_and_as_jobs_the_same_program() -> None:
    for name in ("jobsctl", "jobs"):
        done = subprocess.run([str(Path(sys.executable).parent / name), "--version"], capture_output=True, text=True)
        assert done.returncode == 0 and done.stdout.strip() == f"jobs {version('jobs')}"
