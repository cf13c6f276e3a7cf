"""Our engine through the harness: the public API for enqueue, the `jobsctl worker` CLI for workers."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench import workload
from bench.sqlq import sql
from engine.api import Enqueue, connect

REMAINING = sql("ours_remaining")
PARAMS = {"queue": workload.QUEUE}


async def enqueue_single(dsn: str, n: int) -> float:
    eng = connect(dsn)
    try:
        await eng.aenqueue(workload.noop, {"i": -1})  # warm: pool open, schema checked, prepared
        started = time.perf_counter()
        for i in range(n):
            await eng.aenqueue(workload.noop, {"i": i})
        return n / (time.perf_counter() - started)
    finally:
        await eng.aclose()


async def enqueue_batch(dsn: str, n: int, size: int) -> float:
    eng = connect(dsn)
    try:
        await eng.aenqueue_many([Enqueue(workload.noop, {"i": -1})])
        started = time.perf_counter()
        for base in range(0, n, size):
            await eng.aenqueue_many([Enqueue(workload.noop, {"i": i}) for i in range(base, min(n, base + size))])
        return n / (time.perf_counter() - started)
    finally:
        await eng.aclose()


async def seed(dsn: str, n: int, job: Any = None) -> None:
    handle = job or workload.noop
    eng = connect(dsn)
    try:
        for base in range(0, n, 1000):
            await eng.aenqueue_many([Enqueue(handle, {"i": i}) for i in range(base, min(n, base + 1000))])
    finally:
        await eng.aclose()


def jobs_cli() -> list[str]:
    """The installed `jobsctl` entry point next to this interpreter, else `python -m engine.cli`."""
    script = Path(sys.executable).with_name("jobsctl")
    if script.is_file():
        return [str(script)]
    found = shutil.which("jobsctl")
    return [found] if found else [sys.executable, "-c", "from engine.cli import main; main()"]


# Our worker's settings swept by the drain (the best median is kept, its settings noted): the
# real `jobsctl worker` CLI at two slot counts, and the same Worker embedded in a process on uvloop
# (the loop pgqueuer's CLI runs on).
DRAIN_SETTINGS: dict[str, dict[str, Any]] = {
    "cli c200": {"concurrency": 200, "batch_size": 200, "ack_batch": 200},
    "embedded uvloop c200": {"concurrency": 200, "batch_size": 200, "ack_batch": 200, "embedded": True},
}


def worker_command(
    dsn: str,
    *,
    concurrency: int,
    batch_size: int = 200,
    ack_batch: int = 200,
    embedded: bool = False,
    udp: str | None = None,
) -> list[str]:
    if embedded:
        cfg = {
            "kind": "ours",
            "dsn": dsn,
            "uvloop": True,
            "udp": udp,
            "settings": {"concurrency": concurrency, "batch_size": batch_size, "ack_batch": ack_batch},
        }
        return [sys.executable, "-m", "bench.child", json.dumps(cfg)]
    return [
        *jobs_cli(),
        "worker",
        "bench.workload",
        "--dsn",
        dsn,
        "--queues",
        workload.QUEUE,
        "--concurrency",
        str(concurrency),
        "--batch-size",
        str(batch_size),
        "--ack-batch",
        str(ack_batch),
    ]


async def producer(dsn: str) -> tuple[Callable[[dict[str, Any]], Awaitable[Any]], Callable[[], Awaitable[None]]]:
    eng = connect(dsn, pool_size=20)  # enqueues overlap when one takes longer than the interval
    await eng.aenqueue(workload.noop, {"i": -1, "warm": True})

    async def one(payload: dict[str, Any]) -> None:
        await eng.aenqueue(workload.noop, payload)

    return one, eng.aclose


def worker_available() -> bool:
    """Our worker has landed when engine/runtime/worker.py exists and `jobsctl worker` is a command."""
    if importlib.util.find_spec("engine.runtime.worker") is None:
        return False
    from engine.cli import app

    names = [c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands]
    return "worker" in names


def steps_available() -> bool:
    """Durable steps have landed (the placeholder refused every call) and a worker can run them."""
    from engine.runtime import steps

    if not worker_available():
        return False
    return "X_NOT_IMPLEMENTED" not in Path(steps.__file__).read_text(encoding="utf-8")
