"""Statements and commits per 1,000 jobs and WAL bytes per job (`python -m bench --only costs`): what each system
asks of the server for one job, read from pg_stat_statements and pg_stat_database around one run
of its single enqueue, its batched enqueue (100 a call) and a one-process drain. Every statement
of the system's connections counts (heartbeats, maintenance, LISTEN wake-ups' claims included);
the harness's own poll runs as another role and is left out. With `--durable` each commit is a
WAL flush, which is why commits per job matter there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

import psycopg
from psycopg import conninfo as ci

from bench import ours, peer
from bench.cluster import BenchCluster
from bench.drain import timed_drain
from bench.sqlq import sql

# Backends report their transaction counts to pg_stat_database when idle, at most once a second,
# and when they exit: the read after a run waits this long for the last reports.
SETTLE = 1.5
FIGURES = ("statements", "commits", "wal")
UNITS = {"statements": "per 1k jobs", "commits": "per 1k jobs", "wal": "bytes/job"}


def _dbname(dsn: str) -> str:
    return str(ci.conninfo_to_dict(dsn)["dbname"])


def observer_dsn(dsn: str) -> str:
    """The same database as the harness's role, so its statements are not the system's."""
    return ci.make_conninfo(dsn, user="bench_observer")


def _read(admin: psycopg.Connection[Any], db: str) -> dict[str, Any]:
    row = admin.execute(sql("costs_read"), {"db": db}).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return {"statements": row[0], "harness": row[1], "commits": row[2], "wal": row[4]}


def measure(c: BenchCluster, dsn: str, jobs: int, run: Callable[[], Any]) -> dict[str, float]:
    """The system's statements and commits per 1,000 jobs and the WAL bytes per job written while
    ``run`` ran."""
    db = _dbname(dsn)
    with psycopg.connect(c.admin, autocommit=True) as admin:
        time.sleep(SETTLE)  # the seeding's last reports
        admin.execute(sql("costs_reset"))  # type: ignore[arg-type]
        before = _read(admin, db)
        run()
        time.sleep(SETTLE)
        after = _read(admin, db)
    # Each of the harness's statements is its own transaction (autocommit): not the system's.
    commits = after["commits"] - before["commits"] - (after["harness"] - before["harness"])
    return {
        "statements": (after["statements"] - before["statements"]) * 1000 / jobs,
        "commits": commits * 1000 / jobs,
        "wal": (after["wal"] - before["wal"]) / jobs,
    }


def suite(c: BenchCluster, plan: Any, res: Any, arun: Callable[[Any], Any]) -> None:
    single, batched, drained = plan.enqueue_single // 2, plan.enqueue_batched // 2, plan.drain
    for n in range(plan.runs):
        systems = (("ours", ours), ("peer", peer)) if n % 2 == 0 else (("peer", peer), ("ours", ours))
        for system, mod in systems:
            dsn = c.fresh()
            _add(res, "enqueue.single", system, measure(c, dsn, single, partial(arun, mod.enqueue_single(dsn, single))))
            dsn = c.fresh()
            cost = measure(c, dsn, batched, partial(arun, mod.enqueue_batch(dsn, batched, 100)))
            _add(res, "enqueue.batch100", system, cost)
            dsn = c.fresh()
            arun(mod.seed(dsn, drained))
            if system == "ours":
                cmd = ours.worker_command(dsn, **ours.DRAIN_SETTINGS["cli c200"])
                remaining, params = ours.REMAINING, ours.PARAMS
            else:
                cmd, remaining, params = peer.worker_command(dsn), peer.REMAINING, {}
            drain = partial(timed_drain, observer_dsn(dsn), [cmd], remaining, params, drained)
            _add(res, "drain.p1", system, measure(c, dsn, drained, drain))


def _add(res: Any, what: str, system: str, cost: dict[str, float]) -> None:
    for name in FIGURES:
        res.add(f"cost.{what}.{name}", system, cost[name], unit=UNITS[name], higher_is_better=False)
