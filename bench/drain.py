"""Timing a drain: worker processes spawned, the clock stopped when no job is left unsettled.

The clock starts before the first process is spawned (process start is included) and stops at
the first poll (every POLL seconds, on a connection opened beforehand) that finds nothing left.
``machine_busy`` reads what the machine's cores spent meanwhile: with two worker processes the
drain keeps both cores busy, and its rate is the cores over the CPU a job takes (client and
server, starts included).
"""

from __future__ import annotations

import compileall
import functools
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg

POLL = 0.01
ROOT = Path(__file__).resolve().parents[1]
PROC_STAT = Path("/proc/stat")


def machine_busy() -> float | None:
    """Seconds of CPU the machine's cores have spent busy since boot (user, nice, system, irq,
    softirq; not idle or iowait, nor steal: a neighbour's work on the host), from /proc/stat; None
    where there is none (not Linux)."""
    try:
        first = PROC_STAT.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in first[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


@functools.cache
def compile_tree() -> None:
    """Byte-compile this tree's modules, once per harness, before it starts a worker process. An
    editable install's modules are otherwise compiled from source at every process start where the
    environment sets PYTHONDONTWRITEBYTECODE (~60 ms of a worker's ~360 ms start here), which no
    deployment pays (pip compiles a wheel's modules at install, and the peers' installed packages
    were compiled the same way)."""
    for package in ("engine", "bench"):
        compileall.compile_dir(ROOT / package, quiet=1)


def spawn(argv: Sequence[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], Any]:
    compile_tree()
    log = tempfile.TemporaryFile()
    full_env = {**os.environ, **(env or {})}
    return subprocess.Popen(list(argv), stdout=log, stderr=log, env=full_env, start_new_session=True), log


def stop(procs: Sequence[tuple[subprocess.Popen[bytes], Any]]) -> None:
    for p, _ in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)  # the figure is taken: no need for a graceful end
    for p, log in procs:
        p.wait()
        log.close()


def _failure(procs: Sequence[tuple[subprocess.Popen[bytes], Any]], what: str) -> RuntimeError:
    tails = []
    for p, log in procs:
        log.seek(0)
        tails.append(f"[pid {p.pid} rc {p.returncode}] " + log.read().decode(errors="replace")[-1500:])
    return RuntimeError(f"{what}\n" + "\n".join(tails))


def timed_drain(
    dsn: str,
    commands: Sequence[Sequence[str]],
    remaining_sql: str,
    params: dict[str, Any],
    total: int,
    *,
    env: dict[str, str] | None = None,
    timeout: float = 120.0,
) -> float:
    """Jobs per second from the first spawn to the poll that sees zero unsettled jobs."""
    with psycopg.connect(dsn, autocommit=True, prepare_threshold=0) as conn:
        conn.execute(remaining_sql, params)  # type: ignore[arg-type]  # prepared before the clock
        started = time.perf_counter()
        procs = [spawn(cmd, env) for cmd in commands]
        try:
            while True:
                row = conn.execute(remaining_sql, params).fetchone()  # type: ignore[arg-type]
                if row is not None and row[0] == 0:
                    elapsed = time.perf_counter() - started
                    break
                if all(p.poll() is not None for p, _ in procs):
                    row = conn.execute(remaining_sql, params).fetchone()  # type: ignore[arg-type]
                    if row is not None and row[0] == 0:
                        elapsed = time.perf_counter() - started
                        break
                    raise _failure(procs, "every worker process exited with jobs still unsettled")
                if time.perf_counter() - started > timeout:
                    raise _failure(procs, f"drain did not finish in {timeout:.0f} s (jobs still unsettled)")
                time.sleep(POLL)
        finally:
            stop(procs)
    return total / elapsed
