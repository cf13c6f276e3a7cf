"""The outbox's figures: the cost of a stage inside an application transaction, relay throughput
(rows staged to jobs claimable, 1 and 2 `jobsctl relay` processes) and commit-to-claimable latency.

    python -m bench.outbox                    # a throwaway embedded PostgreSQL, ~1 min
    python -m bench.outbox --rows 20000 --runs 3
    python -m bench.outbox --only relay       # relay throughput and the drain beside it, no stage cost

- stage cost: a sync psycopg transaction that inserts 1 (or 100) application rows and commits,
  against the same transaction that also stages 1 (or 100) jobs with ``eng.stage``/``stage_many``;
  the median of many transactions, in microseconds.
- relay throughput: the relays are started and alive (their heartbeat rows) before ``--rows`` rows
  are staged in transactions of 1,000; the clock runs from the first commit to the first 10 ms poll
  that finds no unpublished row: rows per second, staged to jobs claimable.
- drain: in the same run, the worker drain of bench/drain.py (`jobsctl worker` processes at the
  "cli c200" settings of `python -m bench --only drain`) over ``--rows`` enqueued no-op jobs, with
  1 and 2 processes; relay_over_drain is the relay's rows/s over the drain's jobs/s (>= 1: the relay
  is not the drain's bottleneck).
- latency: one idle relay process; a row staged and committed every 50 ms; the time from the
  commit returning to the NOTIFY the published job's insert sends (delivered at ITS commit, so
  the job is claimable then): p50 and p99 in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import psycopg

from bench import ours
from bench.drain import ROOT, compile_tree, timed_drain
from bench.sqlq import sql
from engine.api import Engine, Enqueue
from engine.drivers.postgres import PostgresDriver
from engine.jobs import job


@job(name="bench_receipt", queue="bench_outbox", idempotency_key=lambda inp: f"order:{inp['order']}")
async def bench_receipt(ctx: Any, inp: Any) -> None:
    return None


def _median_us(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1e6, 1)


def stage_cost(dsn: str, runs: int) -> dict[str, float]:
    """Median microseconds per application transaction, with and without the stage."""
    eng = Engine(PostgresDriver(dsn))
    out: dict[str, float] = {}
    ident = iter(range(1, 10**9))
    with psycopg.connect(dsn) as conn:
        conn.execute(sql("outbox_bench_install"))  # type: ignore[arg-type]
        conn.commit()
        for rows in (1, 100):
            n = runs * (4 if rows == 1 else 1)
            for staged in (False, True, False, True):  # interleaved twice: the machine drifts
                times: list[float] = []
                for _ in range(n):
                    first = next(ident) * 1000
                    t0 = time.perf_counter()
                    with conn.transaction():
                        if rows == 1:
                            conn.execute(sql("outbox_bench_order"), {"id": first})  # type: ignore[arg-type]
                            if staged:
                                eng.stage(conn, bench_receipt, {"order": first})
                        else:
                            conn.execute(sql("outbox_bench_orders"), {"first": first, "n": rows})  # type: ignore[arg-type]
                            if staged:
                                eng.stage_many(
                                    conn, [Enqueue(bench_receipt, {"order": first + i}) for i in range(rows)]
                                )
                    times.append(time.perf_counter() - t0)
                key = f"stage.tx{rows}.{'with' if staged else 'without'}_us"
                out[key] = min(out.get(key, float("inf")), _median_us(times))
    eng.close()
    for rows in (1, 100):
        out[f"stage.tx{rows}.added_us"] = round(out[f"stage.tx{rows}.with_us"] - out[f"stage.tx{rows}.without_us"], 1)
    return out


def _relay(dsn: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-c", "from engine.cli import main; main()", "relay", "--dsn", dsn, "--batch-size", "500"]
    compile_tree()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _scalar(conn: psycopg.Connection[Any], name: str) -> int:
    row = conn.execute(sql(name)).fetchone()  # type: ignore[arg-type]
    return int(row[0]) if row else 0


def _wait_relays(conn: psycopg.Connection[Any], n: int) -> None:
    deadline = time.monotonic() + 60
    while _scalar(conn, "outbox_bench_relays") < n:
        if time.monotonic() > deadline:
            raise RuntimeError("the relays never started")
        time.sleep(0.05)


def throughput(dsn: str, relays: int, rows: int) -> float:
    """Rows per second from the first staging commit until none is unpublished."""
    eng = Engine(PostgresDriver(dsn))
    procs = [_relay(dsn) for _ in range(relays)]
    try:
        with psycopg.connect(dsn, autocommit=True) as probe, psycopg.connect(dsn) as conn:
            _wait_relays(probe, relays)
            t0 = time.perf_counter()
            for start in range(0, rows, 1000):
                with conn.transaction():
                    eng.stage_many(conn, [Enqueue(bench_receipt, {"order": n}) for n in range(start, start + 1000)])
            while _scalar(probe, "outbox_bench_unpublished"):
                time.sleep(0.01)
            return round(rows / (time.perf_counter() - t0))
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(30)
        eng.close()


async def latency(dsn: str, samples: int) -> tuple[float, float]:
    """(p50, p99) ms from a committed stage to the published job's NOTIFY, one idle relay."""
    eng = Engine(PostgresDriver(dsn))
    proc = _relay(dsn)
    out: list[float] = []
    try:
        with psycopg.connect(dsn, autocommit=True) as probe:
            _wait_relays(probe, 1)
        listener = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
        await listener.execute(sql("outbox_bench_listen"))  # type: ignore[arg-type]
        notes = listener.notifies()
        async with await psycopg.AsyncConnection.connect(dsn) as conn:
            for i in range(samples + 5):
                async with conn.transaction():
                    await eng.astage(conn, bench_receipt, {"order": 10**8 + i})
                committed = time.perf_counter()
                await asyncio.wait_for(anext(notes), 5)
                if i >= 5:  # warm-up: the relay's first passes open its pool
                    out.append((time.perf_counter() - committed) * 1000)
                await asyncio.sleep(0.05)
        await listener.close()
    finally:
        proc.terminate()
        proc.wait(30)
        await eng.aclose()
    ordered = sorted(out)
    return round(statistics.median(ordered), 2), round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2)


def drain(dsn: str, procs: int, rows: int) -> float:
    """The worker drain `python -m bench --only drain` measures (bench/drain.py, `jobsctl worker`
    processes at its "cli c200" settings) over ``rows`` enqueued no-op jobs: jobs per second."""
    asyncio.run(ours.seed(dsn, rows))
    cmds = [ours.worker_command(dsn, **ours.DRAIN_SETTINGS["cli c200"]) for _ in range(procs)]
    return round(timed_drain(dsn, cmds, ours.REMAINING, ours.PARAMS, rows))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.outbox")
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=200, help="transactions per stage-cost figure")
    ap.add_argument("--latency-samples", type=int, default=200)
    ap.add_argument("--only", choices=("stage", "relay", "latency"), help="one figure group")
    args = ap.parse_args(argv)
    from bench.cluster import installed_database
    from engine.testing.embedded_pg import EmbeddedPostgres

    pg = EmbeddedPostgres()
    admin = pg.start()
    results: dict[str, Any] = {}

    def fresh(name: str) -> str:
        return installed_database(admin, name)

    try:
        if args.only in (None, "stage"):
            results.update(stage_cost(fresh("outbox_stage"), args.runs))
        # The relay and the drain it feeds, in the same run on the same server.
        for n in (1, 2) if args.only in (None, "relay") else ():
            results[f"relay.p{n}.rows_per_s"] = throughput(fresh(f"outbox_relay{n}"), n, args.rows)
            results[f"drain.p{n}.jobs_per_s"] = drain(fresh(f"outbox_drain{n}"), n, args.rows)
            ratio = results[f"relay.p{n}.rows_per_s"] / results[f"drain.p{n}.jobs_per_s"]
            results[f"relay_over_drain.p{n}"] = round(ratio, 2)
        if args.only in (None, "latency"):
            p50, p99 = asyncio.run(latency(fresh("outbox_latency"), args.latency_samples))
            results["latency.commit_to_claimable.p50_ms"], results["latency.commit_to_claimable.p99_ms"] = p50, p99
    finally:
        pg.close()
    for k, v in results.items():
        print(f"{k:<40} {v}")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
