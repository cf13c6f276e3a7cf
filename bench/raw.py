"""The bare loops (Python, psycopg, no engine): seeding and worker commands for the drain.

`loop` runs over the minimal table of sql/bench/raw.sql; `loopq` runs the engine's own claim
and ack statements over jobs.job, which separates the cost of our schema and SQL from the cost
of our Python.
"""

from __future__ import annotations

import json
import sys

import psycopg

from bench.sqlq import sql

BATCH = 200
REMAINING = sql("raw_remaining")


def seed(dsn: str, n: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        for base in range(0, n, 1000):
            payloads = [json.dumps({"i": i}) for i in range(base, min(n, base + 1000))]
            conn.execute(sql("raw_insert_many"), {"payloads": payloads})  # type: ignore[arg-type]


def worker_command(
    kind: str, dsn: str, *, batch: int = BATCH, loops: int = 1, queue: str = "bench", udp: str | None = None
) -> list[str]:
    cfg = {"kind": kind, "dsn": dsn, "batch": batch, "loops": loops, "queue": queue, "udp": udp}
    return [sys.executable, "-m", "bench.child", json.dumps(cfg)]
