"""The measure: keystrokes from launch to what on-call asks first, counted in a real terminal.

Each path drives the console in tmux at 80x24 on the demo's seeded world (console/demo/world.py,
the hour the screenshots and the live demo show), one key at a time, waiting after each for what
it brings to be on screen, and ends on the screen that answers the question. The README's console
section records these counts; a path that grows past its budget fails here.

tmux is a dependency of this suite (CI installs it): without it these tests fail, they do not skip.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEEDED = "from console.app import JobsConsole; from console.demo.world import seeded_source; " + (
    "JobsConsole(seeded_source(), refresh=60).run()"
)
WAIT = 20.0  # seconds a screen may take to show what a key brings, on a loaded machine


@dataclass(frozen=True)
class Path_:
    question: str
    budget: int
    steps: tuple[tuple[str, str], ...]  # (tmux key, text on screen once it has landed)
    answer: tuple[str, ...]  # what the last screen shows: the answer itself


PATHS = (
    Path_(
        "the stop reason of a dead job",
        3,
        (("3", "jobs in"), ("Enter", "page 1"), ("Enter", "stop reason: ")),
        ("stop reason: attempts-exhausted", "X_SMTP_TIMEOUT"),
    ),
    Path_(
        "the cause of a parked job",
        3,
        (("2", "page 1"), ("t", "state=parked"), ("y", "Why is job")),
        ("parked?",),
    ),
    Path_(
        "the preview of a bulk retry of the dead jobs with one error code",
        6,
        (("3", "jobs in"), ("x", "Retry 1 job [y]")),
        ("code=X_SMTP_TIMEOUT", "would be retried"),
    ),
    Path_(
        "a job's step trace",
        3,
        (("3", "jobs in"), ("Enter", "page 1"), ("Enter", "Steps")),
        ("✗ send", "✓ render"),
    ),
    Path_(
        "pausing a queue",
        3,
        (("p", "Pause this queue?"), ("y", "Queue accounts paused")),
        ("Queue accounts paused",),
    ),
)


class Terminal:
    """One console in a private tmux server, 80x24."""

    def __init__(self, tmux: str, name: str) -> None:
        self.tmux, self.socket = tmux, f"jobs-keys-{os.getpid()}-{name}"

    def run(self, *args: str) -> str:
        done = subprocess.run([self.tmux, "-L", self.socket, *args], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def start(self) -> None:
        command = (
            f"cd {shlex.quote(str(ROOT))} && TERM=xterm-256color {shlex.quote(sys.executable)} -c {shlex.quote(SEEDED)}"
        )
        self.run("new-session", "-d", "-s", "c", "-x", "80", "-y", "24", command)

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "c")

    def until(self, *texts: str, absent: str | None = None) -> str:
        """Wait for every one of ``texts`` to be on screen (polling the pane: the console is
        another process, with nothing to await); fail with the screen as it is."""
        deadline = time.monotonic() + WAIT
        shown = ""
        while time.monotonic() < deadline:
            shown = self.screen()
            if all(t in shown for t in texts) and (absent is None or absent not in shown):
                return shown
            time.sleep(0.1)
        raise AssertionError(f"waited {WAIT:.0f}s for {texts!r}; the screen is:\n{shown}")

    def stop(self) -> None:
        subprocess.run([self.tmux, "-L", self.socket, "kill-server"], capture_output=True, timeout=30)


def test_tmux_is_installed() -> None:
    assert shutil.which("tmux"), "tmux drives the keystroke measure: install it (apt-get install tmux)"


@pytest.fixture
def terminal(request: pytest.FixtureRequest) -> Iterator[Terminal]:
    tmux = shutil.which("tmux")
    assert tmux, "tmux drives the keystroke measure: install it (apt-get install tmux)"
    term = Terminal(tmux, request.node.name.split("[")[-1].rstrip("]")[:20].replace(" ", "-"))
    term.start()
    try:
        term.until("Queues", "accounts", "webhooks")  # launched: the Overview, its data loaded
        yield term
    finally:
        term.stop()


@pytest.mark.parametrize("path", PATHS, ids=[p.question.split(" of ")[0].replace(" ", "-") for p in PATHS])
def test_keystrokes_from_launch_stay_within_budget(terminal: Terminal, path: Path_) -> None:
    for key, landed in path.steps:
        terminal.run("send-keys", "-t", "c", key)
        terminal.until(landed)
    shown = terminal.until(*path.answer)
    assert len(path.steps) <= path.budget, f"{path.question}: {len(path.steps)} keys, budget {path.budget}\n{shown}"
