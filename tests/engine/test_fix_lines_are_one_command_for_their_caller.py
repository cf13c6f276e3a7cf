"""An error's fix is one thing to type, fitted to who reads it: no second choice (", or ") and no
aside saying what to leave out ("(without --flag)"), for a jobsctl line and a Python call alike;
the choice left out goes in the cause. A note's refusal names --note to a jobsctl user and the
``note=`` keyword to a Python caller."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from engine.actions import Operator
from engine.api import Engine
from engine.cli import app
from engine.drivers.memory import MemoryDriver
from engine.errors import JobsError
from tests.engine.test_cli_fix_lines_name_real_commands import _fix_values, _render

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "engine").rglob("*.py"))  # every module of the engine
NOWHERE = "host=/nonexistent-socket-dir dbname=nothing user=nobody"
APP = "tests.engine.test_worker_app"


def _fixes() -> list[tuple[str, str]]:
    out = []
    for path in FILES:
        tree = ast.parse(path.read_text())
        fixes = _fix_values(tree)
        for node in ast.walk(tree):
            if id(node) in fixes and isinstance(node, (ast.Constant, ast.JoinedStr)):
                text = _render(node, [])
                if text:
                    out.append((f"{path.relative_to(ROOT)}:{node.lineno}", text))
    return out


def test_no_fix_offers_two_choices_or_says_what_to_leave_out() -> None:
    fixes = _fixes()
    assert len(fixes) > 300  # the walk reads the fixes (literal and f-string) of every module
    read = {where.partition(":")[0] for where, _ in fixes}
    for module in ("engine/api.py", "engine/runtime/fanin.py", "engine/drivers/postgres/dsn.py"):
        assert module in read, f"the walk missed {module}"
    two = [f"{where}: {text!r}" for where, text in fixes if ", or " in text or "(without" in text]
    assert two == [], "\n".join(two)


def _fix(result: object) -> str:
    err: str = result.stderr  # type: ignore[attr-defined]
    return next(line.strip() for line in err.splitlines() if line.strip().startswith("fix: "))[len("fix: ") :]


@pytest.mark.parametrize(
    ("args", "fix"),
    [
        (["--no-maintenance", "--retention", "60"], f"jobsctl worker {APP} --no-maintenance"),
        (["--reindex-interval", "0", "--reindex-min-mb", "4"], f"jobsctl worker {APP} --reindex-interval 0"),
    ],
)
def test_a_worker_option_at_odds_with_another_is_fixed_by_one_command(args: list[str], fix: str) -> None:
    r = CliRunner().invoke(app, ["worker", APP, *args, "--dsn", NOWHERE])
    assert r.exit_code != 0 and "error X_INVALID_ARGUMENT:" in r.stderr
    assert _fix(r) == fix


def test_a_timeout_flag_with_a_memory_dsn_is_fixed_by_the_command_alone() -> None:
    r = CliRunner().invoke(app, ["--statement-timeout", "5", "queues", "--dsn", "memory://"])
    assert r.exit_code == 1 and _fix(r) == "jobsctl queues --dsn memory://"
    assert "--statement-timeout (a flag or its environment variable) times connections" in r.stderr
    assert r.stderr.count("--statement-timeout") == 1 and "memory:// opens none: 5 was given for it\n" in r.stderr


@pytest.mark.parametrize(
    ("args", "env", "said", "fix"),
    [
        (
            [],
            {"JOBS_STATEMENT_TIMEOUT": "5"},
            "memory:// opens none: $JOBS_STATEMENT_TIMEOUT=5 sets it\n",
            "unset JOBS_STATEMENT_TIMEOUT && jobsctl queues --dsn memory://",
        ),
        (
            ["--statement-timeout", "5"],
            {"JOBS_CONNECT_TIMEOUT": "9"},
            "$JOBS_CONNECT_TIMEOUT=9 sets it, and 5 was given for --statement-timeout\n",
            "unset JOBS_CONNECT_TIMEOUT && jobsctl queues --dsn memory://",
        ),
    ],
)
def test_a_timeout_from_the_environment_with_a_memory_dsn_is_fixed_by_unsetting_its_variable(
    args: list[str], env: dict[str, str], said: str, fix: str
) -> None:
    r = CliRunner().invoke(app, [*args, "queues", "--dsn", "memory://"], env=env)
    assert r.exit_code == 1 and _fix(r) == fix
    assert said in r.stderr


def test_a_tenant_scoped_operator_pausing_a_queue_is_told_the_one_call_that_may() -> None:
    eng = Engine(MemoryDriver())
    op = Operator(eng, actor="alice", tenant="acme")
    with pytest.raises(JobsError) as e:
        _run(op.pause("emails", create=True))
    assert e.value.fix == "Operator(engine, actor=...)" and "no tenant=" in e.value.cause


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_python_caller_with_an_unstorable_note_is_told_the_keyword() -> None:
    op = Operator(Engine(MemoryDriver()), actor="alice")
    with pytest.raises(JobsError) as e:
        _run(op.pause("emails", note="INC\x007", create=True))
    assert "note" in e.value.cause and "NUL" in e.value.cause
    assert e.value.fix.startswith("note=") and "--note" not in e.value.fix


def test_a_jobsctl_user_with_an_unstorable_note_is_told_the_commands_option() -> None:
    r = CliRunner().invoke(app, ["pause", "emails", "--create", "--note", "INC\x007", "--dsn", "memory://"])
    assert r.exit_code == 1 and "NUL" in r.stderr
    assert _fix(r) == "jobsctl pause ... --note 'why, in plain text'"


def test_a_schedule_action_refuses_an_unstorable_note_before_writing_with_the_keyword_as_fix() -> None:
    from engine.introspect.schedules import Schedules

    s = Schedules(Engine(MemoryDriver()), actor="alice")
    for call in (s.trigger("nightly", note="INC\x007"), s.pause("nightly", note="INC\x007")):
        with pytest.raises(JobsError) as e:
            _run(call)
        assert e.value.code == "X_INVALID_ARGUMENT" and "NUL" in e.value.cause
        assert e.value.fix.startswith("note=")


def test_a_jobsctl_schedule_note_that_cannot_be_stored_is_fixed_with_the_commands_option() -> None:
    r = CliRunner().invoke(app, ["schedule", "trigger", "nightly", "--note", "INC\x007", "--dsn", "memory://"])
    assert r.exit_code == 1 and "NUL" in r.stderr
    assert _fix(r) == "jobsctl schedule trigger nightly --note 'why, in plain text'"
