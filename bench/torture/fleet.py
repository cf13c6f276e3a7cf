"""The worker processes: real `jobsctl worker` commands, each writing its own log file.

A slot is one worker position in the fleet (its clock skew stays with the slot); each process
started in a slot is an incarnation with a log file of its own. The fleet restarts only what the
harness killed on purpose: a process that exits by itself is recorded (a worker must never exit
on a lost database) and then started again so the run can go on and count it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.drain import ROOT, compile_tree

APP = "bench.torture.app"


@dataclass
class Incarnation:
    slot: int
    number: int
    proc: subprocess.Popen[bytes]
    log: Path
    started: float
    killed: bool = False  # by the harness (SIGKILL): expected to die
    stopped: bool = False  # SIGSTOPped right now
    drained: bool = False  # SIGTERMed at the end
    terminated: bool = False  # SIGTERMed mid-run (a fault)
    spared_until: float = 0.0  # monotonic: no kill before (a stalled worker, woken, must be seen noticing)
    exit_code: int | None = None
    exit_seconds: float | None = None  # from SIGTERM to exit

    @property
    def pid(self) -> int:
        return self.proc.pid


@dataclass
class Fleet:
    dsn: str
    logs: Path
    size: int = 3
    lease: float = 3.0
    concurrency: int = 16
    skews: tuple[float, ...] = ()
    extra_env: dict[str, str] = field(default_factory=dict)
    incarnations: list[Incarnation] = field(default_factory=list)
    unexpected_exits: list[Incarnation] = field(default_factory=list)

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-c",
            "from engine.cli import main; main()",
            "worker",
            APP,
            "--queues",
            "torture",
            "--concurrency",
            str(self.concurrency),
            "--lease-seconds",
            f"{self.lease:g}",
            "--grace",
            f"{self.GRACE:g}",
            "--close-timeout",
            f"{self.CLOSE:g}",
            "--poll-interval",
            "0.5",
            "--maintenance-interval",
            "1",
        ]

    def start(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        for slot in range(self.size):
            self.spawn(slot)

    def spawn(self, slot: int) -> Incarnation:
        number = sum(1 for i in self.incarnations if i.slot == slot)
        log = self.logs / f"worker-{slot}-{number}.log"
        env = {**os.environ, **self.extra_env, "JOBS_DSN": self.dsn}
        skew = self.skews[slot] if slot < len(self.skews) else 0.0
        if skew:
            env["JOBS_TEST_CLOCK_SKEW"] = f"{skew:g}"
        else:
            env.pop("JOBS_TEST_CLOCK_SKEW", None)
        with log.open("wb") as out:
            compile_tree()
            proc = subprocess.Popen(self.command(), cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        inc = Incarnation(slot, number, proc, log, time.monotonic())
        self.incarnations.append(inc)
        return inc

    def live(self) -> list[Incarnation]:
        """The current incarnation of each slot that is still running."""
        current: dict[int, Incarnation] = {}
        for inc in self.incarnations:
            current[inc.slot] = inc
        return [inc for inc in current.values() if inc.proc.poll() is None]

    def targets(self) -> list[Incarnation]:
        """The workers a fault may pick: running, not stopped, not draining, not spared."""
        now = time.monotonic()
        return [i for i in self.live() if not i.stopped and not i.terminated and i.spared_until <= now]

    def current(self, slot: int) -> Incarnation:
        return [i for i in self.incarnations if i.slot == slot][-1]

    def by_pid(self, pid: int) -> Incarnation | None:
        for inc in self.incarnations:
            if inc.pid == pid:
                return inc
        return None

    GRACE, CLOSE = 5.0, 5.0  # the workers' --grace and --close-timeout

    @property
    def drain_bound(self) -> float:
        return self.GRACE + self.CLOSE

    def term(self, inc: Incarnation, timeout: float) -> tuple[int | None, float | None]:
        """SIGTERM and wait: (exit code, seconds to exit), or (None, None) when it outlived
        ``timeout`` (then it is killed)."""
        inc.terminated = True
        sent = time.monotonic()
        inc.proc.send_signal(signal.SIGTERM)
        try:
            code = inc.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            inc.proc.kill()
            inc.proc.wait()
            return None, None
        inc.exit_code, inc.exit_seconds = code, time.monotonic() - sent
        return code, inc.exit_seconds

    def kill(self, inc: Incarnation) -> None:
        inc.killed = True
        if inc.stopped:
            self.cont(inc)
        inc.proc.send_signal(signal.SIGKILL)
        inc.proc.wait()

    def stop(self, inc: Incarnation) -> None:
        inc.stopped = True
        inc.proc.send_signal(signal.SIGSTOP)

    def cont(self, inc: Incarnation, spare: float = 0.0) -> None:
        inc.stopped = False
        inc.spared_until = time.monotonic() + spare
        inc.proc.send_signal(signal.SIGCONT)

    def reap(self) -> list[Incarnation]:
        """Processes that exited on their own since the last look: recorded, and started again."""
        found: list[Incarnation] = []
        for slot in range(self.size):
            inc = self.current(slot)
            code = inc.proc.poll()
            if code is None or inc.killed or inc.drained or inc.terminated:
                continue
            inc.exit_code = code
            self.unexpected_exits.append(inc)
            found.append(inc)
            self.spawn(slot)
        return found

    def drain(self, timeout: float = 40.0) -> None:
        """SIGTERM every live worker and wait for each to exit (its drain's bound: grace + close)."""
        live = self.live()
        for inc in live:
            if inc.stopped:
                self.cont(inc)
            inc.drained = True
            inc.proc.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        for inc in live:
            try:
                inc.exit_code = inc.proc.wait(timeout=max(0.1, timeout - (time.monotonic() - sent)))
            except subprocess.TimeoutExpired:
                inc.proc.kill()
                inc.exit_code = inc.proc.wait()
                inc.exit_code = inc.exit_code if inc.exit_code is not None else -9
                inc.exit_seconds = None
                continue
            inc.exit_seconds = time.monotonic() - sent

    def kill_all(self) -> None:
        for inc in self.incarnations:
            if inc.proc.poll() is None:
                if inc.stopped:
                    inc.proc.send_signal(signal.SIGCONT)
                inc.proc.kill()
                inc.proc.wait()


def read_events(path: Path) -> list[dict[str, Any]]:
    """A worker log's JSON events (other lines, the start banner among them, are skipped)."""
    out: list[dict[str, Any]] = []
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out
