"""Enqueue-to-start latency at a steady rate: a worker process runs, the parent enqueues on a
fixed schedule, each handler sends (enqueued_at, started_at) back over a Unix datagram socket."""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from bench.drain import spawn, stop

Enqueue = Callable[[dict[str, Any]], Awaitable[Any]]
Producer = Callable[[str], Awaitable[tuple[Enqueue, Callable[[], Awaitable[None]]]]]


class Collector:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="bench-udp-")
        self.path = os.path.join(self.dir, "s")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.2)
        self.samples: list[tuple[float, float]] = []
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop:
            try:
                data = self.sock.recv(16)
            except TimeoutError:
                continue
            except OSError:
                return
            self.samples.append(struct.unpack("dd", data))

    def close(self) -> None:
        self._stop = True
        self._thread.join()
        self.sock.close()
        os.unlink(self.path)
        os.rmdir(self.dir)


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def warm_up(col: Collector, worker: subprocess.Popen[bytes], enqueue: Enqueue) -> None:
    """A job every 20 ms until the worker has started one (it is listening by then); then its
    samples are dropped."""
    deadline = time.monotonic() + 60
    i = -1000
    while not col.samples:
        if time.monotonic() > deadline or worker.poll() is not None:
            raise RuntimeError("the worker never started a job")
        i -= 1
        await enqueue({"i": i, "t": time.time()})
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.3)
    col.samples.clear()


async def offer(col: Collector, enqueue: Enqueue, *, rate: float, seconds: float) -> list[float]:
    """Enqueue at `rate` jobs/s on a fixed schedule for `seconds`; each job's enqueue-to-start in ms."""
    n = max(1, int(rate * seconds))
    tasks: list[asyncio.Task[Any]] = []
    t0 = time.perf_counter()
    for k in range(n):
        delay = t0 + k / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(enqueue({"i": k, "t": time.time()})))
    await asyncio.gather(*tasks)
    deadline = time.monotonic() + 15
    while len(col.samples) < n and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    if len(col.samples) < n:
        raise RuntimeError(f"only {len(col.samples)} of {n} jobs started")
    return [(start - enq) * 1000 for enq, start in col.samples]


async def steady(
    dsn: str,
    command: Callable[[str, str], list[str]],
    producer: Producer,
    *,
    rate: float,
    seconds: float,
    env: Callable[[str], dict[str, str]] | None = None,
) -> tuple[float, float]:
    """(p50, p99) in ms of enqueue-to-start at `rate` jobs/s over `seconds`, one worker process."""
    col = Collector()
    procs = [spawn(command(dsn, col.path), env(col.path) if env else None)]
    enqueue, close = await producer(dsn)
    try:
        await warm_up(col, procs[0][0], enqueue)
        lat = await offer(col, enqueue, rate=rate, seconds=seconds)
        return statistics.median(lat), percentile(lat, 0.99)
    finally:
        await close()
        stop(procs)
        col.close()
