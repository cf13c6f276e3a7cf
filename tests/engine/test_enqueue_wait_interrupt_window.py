"""`jobsctl enqueue --wait` interrupted (Ctrl-C) at any instant after the enqueue: while it prints
the "enqueued" line, or as its wait begins, before the wait's own handling of Ctrl-C. Each exits
130 with the line saying the job goes on and, as its fix, how to follow it; the job stays ready."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from engine.cli import app
from tests.engine import test_worker_app as worker_app

ARGS = ["enqueue", "w.pg_work", "--app", worker_app.__name__, "--input", '{"n": 1}', "--wait"]


def _ctrl_c(*_: Any, **__: Any) -> Any:
    raise KeyboardInterrupt


class _InterruptedPrint:
    """The console the "enqueued" line is printed with, Ctrl-C landing as it prints."""

    def print(self, *_: Any, **__: Any) -> None:
        raise KeyboardInterrupt


def _job_of(said: str) -> str:
    # "stopped waiting for job ID; it goes on"
    assert said.startswith("stopped waiting for job ") and said.endswith("; it goes on"), said
    return said.removeprefix("stopped waiting for job ").removesuffix("; it goes on")


def _still_ready(pg_dsn: str, job_id: str) -> None:
    shown = CliRunner().invoke(app, ["show", job_id, "--dsn", pg_dsn, "--json"])
    assert json.loads(shown.stdout)["job"]["state"] == "ready"  # only the waiting stopped


@pytest.mark.parametrize("where", ["printing the enqueued line", "as the wait begins"])
def test_a_ctrl_c_right_after_the_enqueue_says_the_job_goes_on_and_how_to_follow_it(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    if where == "printing the enqueued line":
        monkeypatch.setattr("engine.cli.ops.console", _InterruptedPrint)
    else:
        monkeypatch.setattr("engine.cli.ops.wait_for", _ctrl_c)
    r = CliRunner().invoke(app, [*ARGS, "--dsn", pg_dsn])
    assert r.exit_code == 130, (r.exit_code, r.output)
    said, fix, *rest = r.stderr.splitlines()
    job_id = _job_of(said)
    assert (fix, rest) == (f"  fix: jobsctl wait {job_id}", [])
    assert "Aborted!" not in r.output
    _still_ready(pg_dsn, job_id)


def test_a_ctrl_c_as_the_wait_begins_says_it_as_json_when_asked(pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("engine.cli.ops.wait_for", _ctrl_c)
    r = CliRunner().invoke(app, [*ARGS, "--dsn", pg_dsn, "--json"])
    assert r.exit_code == 130, (r.exit_code, r.output)
    said = json.loads(r.stderr)
    job_id = _job_of(said["stopped"])
    assert said == {"stopped": f"stopped waiting for job {job_id}; it goes on", "fix": f"jobsctl wait {job_id}"}
    _still_ready(pg_dsn, job_id)
