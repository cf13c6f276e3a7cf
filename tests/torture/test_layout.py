"""The torture run is a session fixture, and the suite's processes take a file each: a second
file reading it would make a second process run the whole run again."""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).parent


def test_only_one_file_reads_the_torture_run_so_the_suite_runs_it_once() -> None:
    readers = sorted(p.name for p in HERE.glob("test_*.py") if re.search(r"\btorture: TortureReport\b", p.read_text()))
    assert readers == ["test_torture.py"]
