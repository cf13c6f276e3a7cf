"""Backfill sweep throughput: a pass (one step per batch, ledger progress fenced on its job,
rate unlimited, batch 1,000) against a plain keyset UPDATE loop over the same table, in the same
run, alternating which goes first.

    python -m bench.backfill [--rows 200000] [--runs 3]

Each side sweeps the whole table from unswept; the figure is rows a second over the wall time
of the sweep (the pass from enqueue to its job's completion, worker already running)."""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import time
from typing import Any

import psycopg

from bench.sqlq import sql
from engine.api import Engine
from engine.backfills import BackfillControl, Backfills, Batch, keyset
from engine.drivers.postgres import PostgresDriver
from engine.schema import install_schema
from engine.services.maintenance import maintained_worker
from engine.testing import EmbeddedPostgres, create_database

SIZE = 1000


def declare(dsn: str) -> Backfills:
    bf = Backfills(connect=lambda: psycopg.connect(dsn))

    def unswept(conn: Any) -> int:
        return int(conn.execute(sql("bf_unswept")).fetchone()[0])

    @bf.backfill(
        "bench_email_lower",
        source=keyset("bench_accounts", "id", where="email_lower is null", columns=["id"]),
        count=unswept,
        batch_size=SIZE,
    )
    def fill(batch: Batch) -> None:
        batch.conn.execute(sql("bf_fill"), {"ids": [r["id"] for r in batch.rows]})

    return bf


def reset(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql("bf_reset"))
        conn.execute("vacuum analyze bench_accounts")


def check(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        missed, twice = conn.execute(sql("bf_check")).fetchone()  # type: ignore[misc]
    assert (missed, twice) == (0, 0), (missed, twice)


def plain(dsn: str, rows: int) -> float:
    with psycopg.connect(dsn, autocommit=True) as conn:
        t0, after, done = time.perf_counter(), 0, 0
        while True:
            last, n = conn.execute(sql("bf_plain_batch"), {"after": after, "size": SIZE}).fetchone()  # type: ignore[misc]
            if not n:
                break
            after, done = last, done + n
        elapsed = time.perf_counter() - t0
    assert done == rows
    return rows / elapsed


async def engine_pass(dsn: str, rows: int, bf: Backfills, run: int) -> float:
    eng = Engine(PostgresDriver(dsn), environment=f"bench-{run}")
    ctl = BackfillControl(eng, bf, actor="bench", environment=f"bench-{run}")
    finished = asyncio.Event()
    driver = PostgresDriver(dsn)
    w = maintained_worker(driver, list(bf), poll_interval=0.05, on_execution=lambda ex: finished.set())
    async with w:
        t0 = time.perf_counter()
        started = await ctl.start("bench_email_lower", write=True)
        await finished.wait()
        elapsed = time.perf_counter() - t0
    [r] = await ctl.history("bench_email_lower", limit=1)
    await driver.close()
    await eng.aclose()
    assert r.status == "completed" and r.swept == rows and r.job_id == started.job_id, r
    return rows / elapsed


async def main(rows: int, runs: int) -> None:
    cluster = EmbeddedPostgres()
    cluster.start()
    try:
        dsn = create_database(cluster.conninfo(), "bench_backfill")
        install_schema(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(sql("bf_table"))
            conn.execute(sql("bf_seed"), {"rows": rows})
        bf = declare(dsn)
        ours: list[float] = []
        theirs: list[float] = []
        for run in range(runs):
            order = ("plain", "pass") if run % 2 == 0 else ("pass", "plain")
            for side in order:
                reset(dsn)
                if side == "plain":
                    theirs.append(plain(dsn, rows))
                else:
                    ours.append(await engine_pass(dsn, rows, bf, run))
                check(dsn)
            print(f"run {run + 1}: plain {theirs[-1]:,.0f} rows/s, pass {ours[-1]:,.0f} rows/s", flush=True)
        p, o = statistics.median(theirs), statistics.median(ours)
        print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {rows:,} rows, batch {SIZE}")
        print(f"median: plain keyset UPDATE loop {p:,.0f} rows/s; backfill pass {o:,.0f} rows/s ({o / p:.0%} of plain)")
    finally:
        cluster.close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    asyncio.run(main(a.rows, a.runs))
