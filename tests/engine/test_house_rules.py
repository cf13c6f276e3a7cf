"""The house rules a tool can check, run as part of the suite so CI enforces them."""

from __future__ import annotations

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


def test_mypy_is_clean_on_the_engine() -> None:
    # pyproject.toml's [tool.mypy] names the package and the settings.
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
