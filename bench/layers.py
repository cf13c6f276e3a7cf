"""Where an enqueue's time goes, layer by layer: `python -m bench.layers [--n 2000] [--runs 5] [--batch 100]`.

One embedded server, a fresh database per measurement, each layer in turn (the order rotated
every run), n sequential calls on one connection, warm (the first 50 not timed). Per call:
wall time and the client process's CPU time (time.process_time: what this Python process spent,
the server's share excluded), medians over the runs.

Layers, from the bare wire up:
- asyncpg: our insert (job_enqueue_one's text, positional) through asyncpg, prepared: the
  client pgqueuer uses, on our statement.
- psycopg: the same through an AsyncRawCursor (prepared after psycopg's prepare_threshold, 5
  calls): psycopg's cursor, as the driver's other statements go.
- wire: the same through libpq directly (engine/drivers/postgres/wire.py), prepared, as the
  driver sends the single enqueue.
- psycopg unprepared: the same with prepare_threshold=None (parse and plan every call).
- psycopg pipeline: the same, prepared, each call in its own pipeline block (psycopg's pipeline
  mode: one Sync per block; a single statement still waits for its own answer).
- driver: PostgresDriver.job_enqueue with one NewJob (the pool, the raw cursor, the answer).
- engine: Engine.aenqueue (the checks, the id, the row, the driver).
- pgqueuer: Queries.enqueue (its whole statement through asyncpg), the peer.
Each layer's cost above the one below is what it adds.

`--batch 100`: n calls of 100 rows each, per job: the statement alone (job_enqueue_fresh, its
jsonb document built in the loop), the driver (PostgresDriver.job_enqueue), the engine
(aenqueue_many) and pgqueuer's Queries.enqueue of 100.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import orjson
import psycopg

from bench import peer, workload
from bench.cluster import BenchCluster, asyncpg_kwargs
from engine.drivers.sqlfiles import Q

WARM = 50
Call = Callable[[int], Awaitable[Any]]


def _values(i: int) -> dict[str, Any]:
    now = datetime.now(UTC)
    return {
        "id": str(uuid.uuid4()),
        "name": workload.noop.name,
        "queue": workload.QUEUE,
        "tenant": None,
        "key": f"k{i}",
        "input": orjson.dumps({"i": i}).decode(),
        "max_attempts": 3,
        "run_at": None,  # due now: the driver sends null, the statement takes now
        "priority": 0,
        "created_at": None,
        "now": now,
    }


def _positional(v: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(v[n] for n in Q.job_enqueue_one.positional[1])


async def _asyncpg(dsn: str) -> tuple[Call, Callable[[], Awaitable[None]]]:
    import asyncpg

    conn = await asyncpg.connect(**asyncpg_kwargs(dsn))
    # The statement's positional form ($n), as the driver's raw cursor sends it.
    stmt = await conn.prepare(Q.job_enqueue_one.positional[0])

    async def one(i: int) -> Any:
        v = _values(i)
        return await stmt.fetchrow(*_positional(v))

    return one, conn.close


async def _psycopg(dsn: str, prepare: bool, pipeline: bool = False) -> tuple[Call, Callable[[], Awaitable[None]]]:
    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True, prepare_threshold=5 if prepare else None)
    text = Q.job_enqueue_one.positional[0]

    async def one(i: int) -> Any:
        cur = psycopg.AsyncRawCursor(conn)
        await cur.execute(text, _positional(_values(i)))  # type: ignore[arg-type]
        return await cur.fetchone()

    async def piped(i: int) -> Any:
        async with conn.pipeline():
            cur = psycopg.AsyncRawCursor(conn)
            await cur.execute(text, _positional(_values(i)))  # type: ignore[arg-type]
        return await cur.fetchone()

    return (piped if pipeline else one), conn.close


async def _wire(dsn: str) -> tuple[Call, Callable[[], Awaitable[None]]]:
    from engine.drivers.postgres import wire

    conn = await wire.Connection.connect(dsn, autocommit=True)
    text = Q.job_enqueue_one.positional[0]

    async def one(i: int) -> Any:
        return await wire.fetch(conn, "layers", text, _positional(_values(i)), prepare=True)

    return one, conn.close


async def _driver(dsn: str) -> tuple[Call, Callable[[], Awaitable[None]]]:
    from engine.drivers.postgres import PostgresDriver
    from engine.types import NewJob

    d = PostgresDriver(dsn, pool_size=1)
    await d.open()

    async def one(i: int) -> Any:
        now = datetime.now(UTC)
        job = NewJob(str(uuid.uuid4()), workload.noop.name, workload.QUEUE, f"k{i}", {"i": i}, 3)
        return await d.job_enqueue(jobs=[job], now=now)

    return one, d.close


async def _engine(dsn: str) -> tuple[Call, Callable[[], Awaitable[None]]]:
    from engine.api import connect

    eng = connect(dsn, pool_size=1)

    async def one(i: int) -> Any:
        return await eng.aenqueue(workload.noop, {"i": i})

    return one, eng.aclose


async def _pgqueuer(dsn: str) -> tuple[Call, Callable[[], Awaitable[None]]]:
    q, conn = await peer._queries(dsn)

    async def one(i: int) -> Any:
        return await q.enqueue(peer.ENTRYPOINT, orjson.dumps({"i": i}))

    return one, conn.close


async def _batch_psycopg(dsn: str, size: int) -> tuple[Call, Callable[[], Awaitable[None]]]:
    """job_enqueue_fresh with its one jsonb parameter built as the driver builds it, prepared."""
    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    text = Q.job_enqueue_fresh.positional[0]

    async def one(i: int) -> Any:
        now = datetime.now(UTC)
        rows = [
            [
                str(uuid.uuid4()),
                workload.noop.name,
                workload.QUEUE,
                None,
                f"k{i}:{k}",
                orjson.Fragment(b'{"i":1}'),
                3,
                now,
                0,
            ]
            for k in range(size)
        ]
        cur = psycopg.AsyncRawCursor(conn)
        values = {"now": now, "rows": orjson.dumps(rows).decode()}
        await cur.execute(text, tuple(values[n] for n in Q.job_enqueue_fresh.positional[1]))  # type: ignore[arg-type]
        return await cur.fetchone()

    return one, conn.close


async def _batch_driver(dsn: str, size: int) -> tuple[Call, Callable[[], Awaitable[None]]]:
    from engine.drivers.postgres import PostgresDriver
    from engine.types import NewJob

    d = PostgresDriver(dsn, pool_size=1)
    await d.open()

    async def one(i: int) -> Any:
        now = datetime.now(UTC)
        jobs = [
            NewJob(str(uuid.uuid4()), workload.noop.name, workload.QUEUE, f"k{i}:{k}", {"i": k}, 3) for k in range(size)
        ]
        return await d.job_enqueue(jobs=jobs, now=now)

    return one, d.close


async def _batch_engine(dsn: str, size: int) -> tuple[Call, Callable[[], Awaitable[None]]]:
    from engine.api import Enqueue, connect

    eng = connect(dsn, pool_size=1)

    async def one(i: int) -> Any:
        return await eng.aenqueue_many([Enqueue(workload.noop, {"i": i * size + k}) for k in range(size)])

    return one, eng.aclose


async def _batch_pgqueuer(dsn: str, size: int) -> tuple[Call, Callable[[], Awaitable[None]]]:
    q, conn = await peer._queries(dsn)

    async def one(i: int) -> Any:
        payloads = [orjson.dumps({"i": i * size + k}) for k in range(size)]
        return await q.enqueue([peer.ENTRYPOINT] * size, payloads, [0] * size)

    return one, conn.close


def batch_layers(size: int) -> dict[str, Callable[[str], Awaitable[tuple[Call, Callable[[], Awaitable[None]]]]]]:
    return {
        "psycopg statement": lambda dsn: _batch_psycopg(dsn, size),
        "driver": lambda dsn: _batch_driver(dsn, size),
        "engine": lambda dsn: _batch_engine(dsn, size),
        "pgqueuer": lambda dsn: _batch_pgqueuer(dsn, size),
    }


LAYERS: dict[str, Callable[[str], Awaitable[tuple[Call, Callable[[], Awaitable[None]]]]]] = {
    "asyncpg": _asyncpg,
    "psycopg": lambda dsn: _psycopg(dsn, True),
    "psycopg unprepared": lambda dsn: _psycopg(dsn, False),
    "psycopg pipeline": lambda dsn: _psycopg(dsn, True, pipeline=True),
    "wire": _wire,
    "driver": _driver,
    "engine": _engine,
    "pgqueuer": _pgqueuer,
}


async def _measure(dsn: str, layer: str, n: int, layers: dict[str, Any]) -> tuple[float, float]:
    one, close = await layers[layer](dsn)
    try:
        for i in range(-WARM, 0):
            await one(i)
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(n):
            await one(i)
        return (time.perf_counter() - wall) / n * 1e6, (time.process_time() - cpu) / n * 1e6
    finally:
        await close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.layers")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--durable", action="store_true")
    ap.add_argument("--batch", type=int, default=0, help="batches of this many rows a call instead of single enqueues")
    args = ap.parse_args(argv)
    layers = batch_layers(args.batch) if args.batch else LAYERS
    from bench.suites import arun

    cluster = BenchCluster(durable=args.durable)
    cluster.start()
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in layers}
    try:
        names = list(layers)
        for run in range(args.runs):
            for layer in names[run % len(names) :] + names[: run % len(names)]:
                got[layer].append(arun(_measure(cluster.fresh(), layer, args.n, layers)))
    finally:
        cluster.close()
    per = args.batch or 1
    what = f"batches of {args.batch}" if args.batch else "single enqueues"
    print(f"{args.n} sequential {what} per run, {args.runs} runs, medians (us per job)")
    print(f"{'layer':<20} {'wall':>8} {'client CPU':>11} {'jobs/s':>9}")
    for layer, xs in got.items():
        wall = statistics.median(x[0] for x in xs) / per
        cpu = statistics.median(x[1] for x in xs) / per
        print(f"{layer:<20} {wall:8.1f} {cpu:11.1f} {1e6 / wall:9,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
