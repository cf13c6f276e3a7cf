"""`python -m bench.soak.backlog`: the drain rate with a backlog of 1,000,000 ready jobs against
the rate with 10,000: claims must not get slower as the table grows (target: the large one at
least 90% of the small one's rate).

Each depth is seeded once into a template database (one statement, then VACUUM ANALYZE) and
every run drains a fresh clone of it: ``--workers`` real `jobsctl worker bench.workload` processes
(concurrency 200, batch 200, ack batch 200, as bench's drain) start, and the rate is taken over
the same window at both depths: from the ``--skip``-th completion (the processes started,
connected, warmed) to the (``--skip`` + ``--window``)-th, read from the acks' own stamps
(``finished_at``), so the poll's granularity never enters the figure. Runs alternate small and large; the figures are medians.
bench/README.md, "Backlog".
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime

import psycopg
from psycopg import sql as pgsql

from bench.drain import ROOT, compile_tree
from bench.torture.sqlq import sql
from engine.testing import EmbeddedPostgres, create_database, drop_database, install

WORKER = ["worker", "bench.workload", "--queues", "bench", "--concurrency", "200", "--batch-size", "200"]
WORKER += ["--ack-batch", "200"]


KEYS = ("decimal", "padded", "random")  # the seeded idempotency keys' shapes (sql/torture/soak.sql)


def seed_template(admin: str, name: str, n: int, keys: str = "decimal") -> None:
    dsn = create_database(admin, name)
    install(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql("soak_seed_ready"), {"n": n, "now": datetime.now(UTC), "keys": keys})  # type: ignore[arg-type]
        conn.execute(sql("soak_vacuum"))  # type: ignore[arg-type]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(pgsql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS false").format(pgsql.Identifier(name)))


def drain_rate(admin: str, template: str, run: str, *, workers: int, skip: int, window: int) -> float:
    """Jobs settled a second between ``skip`` and ``skip + window`` settled, on a clone of ``template``."""
    dsn = create_database(admin, run, template)
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            settled = sql("soak_settled")
            env = {**os.environ, "JOBS_DSN": dsn}
            cmd = [sys.executable, "-c", "from engine.cli import main; main()", *WORKER]
            compile_tree()
            procs = [
                subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                for _ in range(workers)
            ]
            deadline = time.monotonic() + 600
            while True:  # until the window's last job is settled
                row = conn.execute(settled).fetchone()  # type: ignore[arg-type]
                n = int(row[0]) if row else 0
                if n >= skip + window:
                    break
                if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                    raise RuntimeError(f"the drain of {template} stopped at {n} jobs")
                time.sleep(0.05)
            # The rate between the skip-th and the (skip + window)-th completion, by the acks' own
            # stamps (one clock: every worker runs on this machine's).
            nth = sql("soak_finished_nth")
            first = conn.execute(nth, {"n": skip - 1}).fetchone()  # type: ignore[arg-type]
            last = conn.execute(nth, {"n": skip + window - 1}).fetchone()  # type: ignore[arg-type]
            assert first is not None and last is not None
            return window / (last[0] - first[0]).total_seconds()
    finally:
        for p in procs:
            p.kill()
            p.wait()
        drop_database(admin, run)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.soak.backlog", description=__doc__)
    p.add_argument("--small", type=int, default=10_000)
    p.add_argument("--large", type=int, default=1_000_000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--skip", type=int, default=1_000, help="jobs settled before the window opens")
    p.add_argument("--window", type=int, default=8_000, help="jobs settled inside the small backlog's window")
    p.add_argument(
        "--large-window",
        type=int,
        default=100_000,
        help="the large backlog's window: long enough for its indexes to be read into the cache once",
    )
    p.add_argument("--runs", type=int, default=3)
    p.add_argument(
        "--keys",
        default="decimal",
        help="the jobs' idempotency keys, one shape or several separated by commas (each measured in "
        "turn, in one invocation): decimal (seed:1, seed:2: in the dedupe index's order at 10,000, "
        "scattered at 1,000,000), padded (in its order at both depths), random (in none at either)",
    )
    p.add_argument(
        "--setting", action="append", default=[], metavar="NAME=VALUE", help="a server setting (shared_buffers=1GB)"
    )
    a = p.parse_args(argv)
    settings = dict(kv.split("=", 1) for kv in a.setting)
    if a.skip + a.window > a.small:
        p.error(f"--skip + --window ({a.skip + a.window}) must fit in --small ({a.small})")
    shapes = [k.strip() for k in a.keys.split(",") if k.strip()]
    if not shapes or any(k not in KEYS for k in shapes):
        p.error(f"--keys {a.keys!r}: each shape must be one of {', '.join(KEYS)} (--keys decimal,padded)")
    pg = EmbeddedPostgres(settings={"max_wal_size": "4GB", **settings})
    try:
        admin = pg.start()
        started = time.monotonic()
        cells = [(keys, name) for keys in shapes for name in ("small", "large")]
        for keys, name in cells:
            seed_template(admin, f"backlog_{keys}_{name}", a.small if name == "small" else a.large, keys)
        print(f"seeded {a.small:,} and {a.large:,} ready jobs in {time.monotonic() - started:.0f} s", flush=True)
        rates: dict[tuple[str, str], list[float]] = {cell: [] for cell in cells}
        for r in range(a.runs):
            for keys, name in cells if r % 2 == 0 else reversed(cells):  # drift hits every cell alike
                window = a.window if name == "small" else min(a.large_window, a.large - a.skip)
                rate = drain_rate(
                    admin,
                    f"backlog_{keys}_{name}",
                    f"run_{keys}_{name}_{r}",
                    workers=a.workers,
                    skip=a.skip,
                    window=window,
                )
                rates[keys, name].append(rate)
                print(f"run {r + 1} {keys} {name}: {rate:,.0f} jobs/s", flush=True)
        for keys in shapes:
            print(_summary(a, keys, rates[keys, "small"], rates[keys, "large"]), flush=True)
        return 0
    finally:
        pg.close()


def _summary(a: argparse.Namespace, keys: str, smalls: list[float], larges: list[float]) -> str:
    small, large = statistics.median(smalls), statistics.median(larges)
    ratio = large / small
    return (
        f"backlog drain ({a.workers} workers; jobs {a.skip:,} to {a.skip + a.window:,} of the small, to "
        f"{a.skip + min(a.large_window, a.large - a.skip):,} of the large), keys {keys}: {a.small:,} ready "
        f"{small:,.0f} jobs/s [{min(smalls):,.0f}-{max(smalls):,.0f}], {a.large:,} ready "
        f"{large:,.0f} jobs/s [{min(larges):,.0f}-{max(larges):,.0f}]; ratio {ratio:.3f} "
        f"(target >= 0.90: {'met' if ratio >= 0.9 else 'MISSED'})" + (f"; {', '.join(a.setting)}" if a.setting else "")
    )


if __name__ == "__main__":
    raise SystemExit(main())
