"""What each index costs the hot path, in server CPU: `python -m bench.indexcost [--runs 3]`.

For each variant of the schema (VARIANTS: the one table before 0010_settled_rows, 0010's live
table + jobs.job_done, this tree's schema, and single changes to its index sets), it enqueues
batches of 1,000, then of 100, through the statement the engine sends a batch as
(job_enqueue_fresh: a plain insert; ids time-ordered, as the engine mints them), then batches of
1,000 through job_enqueue (the same through ON CONFLICT: "+arbiter"), and runs 100 claim + ack
cycles of 200 through worker_claim and job_ack_many, on one connection, and reads that backend's
CPU time (utime + stime from /proc, so a noisy neighbour's steal does not count as ours) per row.
Prints a table; the figures answer "what does each index set cost an enqueue, a claim and an
ack" with numbers rather than wall-clock guesses on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable
from datetime import UTC, datetime

import orjson
import psycopg

from bench.cluster import BenchCluster
from bench.sqlq import sql
from engine.clock import SystemClock
from engine.drivers.postgres.rows import CLAIM_FIELDS
from engine.drivers.sqlfiles import Q
from engine.ids import IdFactory

# Each variant: (the last migration applied, None for all, statements run on top, the ack
# statement). "0009" is the schema before 0010_settled_rows (one table: settled rows keep the list
# indexes' entries and the ack updates in place); "0010" the live table + jobs.job_done with the
# console's own live-list indexes; the others are this tree's schema (0011_live_indexes: those
# folded into the dedupe index and job_live_queue_state), then one change each to its index sets.
Variant = tuple[int | None, list[str], str]
VARIANTS: dict[str, Variant] = {
    "0009: one table, ack in place": (9, [], "ack_in_place"),
    "0010: live table + job_done": (10, [], ""),
    "0011: live lists folded": (None, [], ""),
    "0011, job_done without job_list_state": (None, ["drop index jobs.job_list_state"], ""),
    "0011, job_done finished_at as BRIN": (
        None,
        [
            "drop index jobs.job_done_finished_at",
            "create index job_done_finished_at on jobs.job_done using brin (finished_at)",
        ],
        "",
    ),
    "0011, job_done GIN with fastupdate off": (None, ["alter index jobs.job_list_input set (fastupdate = off)"], ""),
    "0011, job_done without the GIN on input": (None, ["drop index jobs.job_list_input"], ""),
    "0011, jobs.job without job_live_input (GIN)": (None, ["drop index jobs.job_live_input"], ""),
    "0011, jobs.job with claim, dedupe, due only": (
        None,
        ["drop index jobs.job_live_input", "drop index jobs.job_live_queue_state"],
        "",
    ),
}
_TICK = os.sysconf("SC_CLK_TCK")
_RUN = CLAIM_FIELDS.index("run")


def _cpu(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().split(")")[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _per_row(pid: int, rows: int, work: Callable[[], None]) -> float:
    before = _cpu(pid)
    work()
    return (_cpu(pid) - before) / rows * 1e6


def measure(dsn: str, setup: list[str], ack: str = "") -> tuple[float, float, float, float, float]:
    """(enqueue as the engine sends a batch of 1,000, of 100, the 1,000 through ON CONFLICT,
    claim, ack) backend CPU in us a row."""
    ack_sql = sql(ack) if ack else Q.job_ack_many.text
    with psycopg.connect(dsn, autocommit=True, prepare_threshold=0) as conn:
        for statement in setup:
            conn.execute(statement)  # type: ignore[arg-type]
        pid = conn.info.backend_pid
        now = datetime.now(UTC)
        ids = IdFactory(SystemClock())  # time-ordered, as the engine mints them

        def batch(b: int, size: int) -> str:
            return orjson.dumps(
                [[ids.new(), "bench.noop", "bench", None, f"{b}-{i}", {"i": i}, 1, now, 0] for i in range(size)]
            ).decode()

        batches = [batch(b, 1000) for b in range(24)]
        small = [batch(100 + b, 100) for b in range(60)]

        def enqueue(docs: list[str], sql: str = Q.job_enqueue_fresh.text) -> None:
            for doc in docs:
                conn.execute(sql, {"rows": doc, "now": now})  # type: ignore[arg-type]

        enqueue(batches[:2])  # prepared and warm
        enq = _per_row(pid, 5_000, lambda: enqueue(batches[2:7]))
        enqueue(small[:10])
        enq100 = _per_row(pid, 5_000, lambda: enqueue(small[10:]))
        enqueue(batches[7:8], Q.job_enqueue.text)
        arbiter = _per_row(pid, 5_000, lambda: enqueue(batches[8:13], Q.job_enqueue.text))
        enqueue(batches[13:])
        claim_cpu = ack_cpu = 0.0
        for cycle in range(110):
            t0 = _cpu(pid)
            got = [
                r
                for r in conn.execute(
                    Q.worker_claim.text,
                    {  # type: ignore[arg-type]
                        "queues": ["bench"],
                        "floors": [None],
                        "limit": 200,
                        "worker": "w1",
                        "now": now,
                        "lease_seconds": 30.0,
                    },
                ).fetchall()
                if r[0] is not None
            ]
            t1 = _cpu(pid)
            conn.execute(
                ack_sql,  # type: ignore[arg-type]
                {  # type: ignore[arg-type]
                    "ids": "{" + ",".join(r[0] for r in got) + "}",
                    "workers": ["w1"] * len(got),
                    "runs": "{" + ",".join(str(r[_RUN]) for r in got) + "}",
                    "results": ["null"] * len(got),
                    "now": now,
                },
            )
            if cycle >= 10:
                claim_cpu += t1 - t0
                ack_cpu += _cpu(pid) - t1
        return enq, enq100, arbiter, claim_cpu / 20_000 * 1e6, ack_cpu / 20_000 * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.indexcost", description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    cluster = BenchCluster()
    got: dict[str, list[tuple[float, float, float, float, float]]] = {}
    try:
        cluster.start()
        for _ in range(args.runs):
            for name, (target, setup, ack) in VARIANTS.items():  # interleaved: drift hits every variant
                got.setdefault(name, []).append(
                    measure(cluster.fresh() if target is None else cluster.fresh_at(target), setup, ack)
                )
    finally:
        cluster.close()
    print(f"backend CPU per row, median of {args.runs} runs (us)")
    print(f"{'index set':44s} {'enqueue':>8s} {'of 100':>8s} {'+arbiter':>8s} {'claim':>8s} {'ack':>8s}")
    for name, rows in got.items():
        enq, enq100, arbiter, claim, ack = (statistics.median(r[i] for r in rows) for i in range(5))
        print(f"{name:44s} {enq:8.1f} {enq100:8.1f} {arbiter:8.1f} {claim:8.1f} {ack:8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
