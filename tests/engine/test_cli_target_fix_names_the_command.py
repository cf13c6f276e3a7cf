"""A module target that cannot be loaded (`--app MODULE:ATTR` naming no attribute, or no module at
all) is answered with a fix in the command the person typed, with the target mended: `jobsctl
describe`, `enqueue`, `scheduler` and `backfill` read a module as `jobsctl worker` does, and their
fix is not `jobsctl worker ...`, which would start a worker instead."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from engine.cli import app

MOD = "tests.engine.test_worker_app"
MEM = ["--dsn", "memory://"]


def _fix(args: list[str]) -> str:
    r = CliRunner().invoke(app, args)
    assert r.exit_code != 0, r.output
    err = json.loads(r.stderr)["error"] if "--json" in args else None
    if err is not None:
        assert err["code"] == "X_WORKER_TARGET", err
        return str(err["fix"])
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("  fix: ")]
    assert "X_WORKER_TARGET" in r.stderr, r.stderr
    return line.removeprefix("  fix: ")


@pytest.mark.parametrize(
    ("args", "fix"),
    [
        (["describe", "--app", f"{MOD}:nope"], f"jobsctl describe --app {MOD}"),
        (["describe", "--app", ":nope"], "jobsctl describe --app myapp.jobs"),
        (["enqueue", "w.pg_work", "--app", f"{MOD}:nope", *MEM, "--json"], f"jobsctl enqueue w.pg_work --app {MOD}"),
        (["scheduler", f"{MOD}:nope", *MEM], f"jobsctl scheduler {MOD}"),
        (["backfill", "--app", f"{MOD}:nope", *MEM, "--json"], f"jobsctl backfill --app {MOD}"),
        (["worker", f"{MOD}:nope", *MEM], f'jobsctl worker {MOD} --dsn "$JOBS_DSN"'),
    ],
)
def test_a_target_that_cannot_be_loaded_is_mended_in_the_command_that_was_typed(args: list[str], fix: str) -> None:
    assert _fix(args) == fix
