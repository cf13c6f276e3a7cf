"""The house rules a tool can check, run as part of the suite so CI enforces them."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_ruff_is_clean() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "engine", "console", "tests", "bench"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:]


def test_ruff_format_leaves_every_file_as_it_is() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "engine", "console", "tests", "bench"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:]


def test_mypy_is_clean_on_the_engine_and_the_console() -> None:
    # pyproject.toml's [tool.mypy] names the packages and the settings.
    done = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]


def test_the_import_contracts_hold() -> None:
    # pyproject.toml's [tool.importlinter] contracts: the engine's layers, the drivers' independence,
    # the runtime's ignorance of any particular driver, the console's door to the engine.
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]


def test_no_module_of_engine_or_console_passes_450_lines() -> None:
    big = [
        f"{p.relative_to(ROOT)} ({n})"
        for p in [*ROOT.glob("engine/**/*.py"), *ROOT.glob("console/**/*.py")]
        if (n := len(p.read_text().splitlines())) > 450
    ]
    assert big == []


def _names_no_fix(call: ast.Call) -> bool:
    """A JobsError(...) call that names no fix: neither a third argument nor ``fix=``."""
    named = {k.arg for k in call.keywords}
    return len(call.args) < 3 and "fix" not in named and None not in named  # None: a **mapping


def test_every_error_the_engine_and_console_raise_names_a_fix() -> None:
    """JobsError's fix may be left empty by a handler's own error; never by ours (DESIGN.md)."""
    bare = [
        f"{p.relative_to(ROOT)}:{node.lineno}"
        for p in [*ROOT.glob("engine/**/*.py"), *ROOT.glob("console/**/*.py")]
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "JobsError"
        and _names_no_fix(node)
    ]
    assert bare == []
