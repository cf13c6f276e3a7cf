"""The peer, pgqueuer, through the same harness: enqueue, seeding, worker commands.

Its workers run as pgqueuer's own CLI would (uvloop, asyncpg, a QueueManager) with the batch size
of the comparison (200, as bench/README.md states); its producers use one asyncpg connection, or a pool when concurrent.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.cluster import asyncpg_kwargs
from bench.sqlq import sql

ENTRYPOINT = "noop"
BATCH = 200
REMAINING = sql("peer_remaining")


def _payload(i: int) -> bytes:
    return json.dumps({"i": i}).encode()


async def _queries(dsn: str, pool: bool = False) -> tuple[Any, Any]:
    import asyncpg
    from pgqueuer.db import AsyncpgDriver, AsyncpgPoolDriver
    from pgqueuer.queries import Queries

    if pool:
        p = await asyncpg.create_pool(**asyncpg_kwargs(dsn), min_size=10, max_size=10)
        return Queries(AsyncpgPoolDriver(p)), p
    conn = await asyncpg.connect(**asyncpg_kwargs(dsn))
    return Queries(AsyncpgDriver(conn)), conn


async def enqueue_single(dsn: str, n: int) -> float:
    q, conn = await _queries(dsn)
    try:
        await q.enqueue(ENTRYPOINT, _payload(-1))  # warm: the statement is prepared
        started = time.perf_counter()
        for i in range(n):
            await q.enqueue(ENTRYPOINT, _payload(i))
        return n / (time.perf_counter() - started)
    finally:
        await conn.close()


async def enqueue_batch(dsn: str, n: int, size: int) -> float:
    q, conn = await _queries(dsn)
    try:
        await q.enqueue([ENTRYPOINT], [_payload(-1)], [0])
        started = time.perf_counter()
        for base in range(0, n, size):
            count = min(size, n - base)
            await q.enqueue([ENTRYPOINT] * count, [_payload(base + k) for k in range(count)], [0] * count)
        return n / (time.perf_counter() - started)
    finally:
        await conn.close()


async def seed(dsn: str, n: int) -> None:
    q, conn = await _queries(dsn)
    try:
        for base in range(0, n, 1000):
            count = min(1000, n - base)
            await q.enqueue([ENTRYPOINT] * count, [_payload(base + k) for k in range(count)], [0] * count)
    finally:
        await conn.close()


def worker_command(dsn: str, *, batch: int = BATCH, udp: str | None = None) -> list[str]:
    # asyncpg's keywords made here: the peer's process imports pgqueuer and asyncpg, and none of
    # the harness's own modules (psycopg, the cluster), whose import would count as its start.
    cfg = {"kind": "peer", "asyncpg": asyncpg_kwargs(dsn), "batch": batch, "uvloop": True, "udp": udp}
    return [sys.executable, "-m", "bench.child", json.dumps(cfg)]


async def producer(dsn: str) -> tuple[Callable[[dict[str, Any]], Awaitable[Any]], Callable[[], Awaitable[None]]]:
    """An enqueue-one function for the latency run (a pool: enqueues may overlap) and its closer."""
    q, pool = await _queries(dsn, pool=True)

    async def one(payload: dict[str, Any]) -> None:
        await q.enqueue(ENTRYPOINT, json.dumps(payload).encode())

    return one, pool.close
