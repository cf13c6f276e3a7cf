"""The hot table under long snapshots, and at a held depth: `python -m bench.pressure`.

    python -m bench.pressure --scenario idle-tx       # clean, then sessions idle in transaction, then recovery
    python -m bench.pressure --scenario rr-readers    # clean, then long REPEATABLE READ readers, then recovery
    python -m bench.pressure --scenario held --minutes 30 --depth 4000   # throughput at a held depth

One throwaway PostgreSQL (`--durable`: fsync and synchronous_commit on), `jobsctl worker
bench.workload` processes (maintenance on, as users run them; `--workers` x `--concurrency`
slots, no-op jobs), and a producer in this process:
- idle-tx / rr-readers: a steady offered rate (`--rate` jobs/s, enqueued every 50 ms in one
  batch) through three phases, `--clean` s, `--pressure` s, `--recovery` s. The pressure is
  `--sessions` sessions that take a transaction id and sit idle in transaction (idle-tx: the xmin
  horizon held), or readers that each hold one REPEATABLE READ transaction and read the live jobs
  every 0.2 s (rr-readers), for the whole pressure phase.
- held: the producer tops the ready backlog up to `--depth` every 100 ms for `--minutes`.
Each second the harness samples completions (the acks' own finished_at), the ready depth, and the
jobs tables' dead and live tuples and sizes. Printed: per phase the completion rate, its ratio to
the clean phase (target >= 0.90), the deepest backlog, the claim wait p50/p99 (run_at to
claimed_at), the most dead tuples; for held, the rate per minute with the dead tuples beside it
(target: the last minutes within 10% of the first), and each minute the server's counters and
the CPU of the workers, of this harness and of the rest (the server). `--statements` loads
pg_stat_statements and prints, per minute, the time a call of the statements costing the server
most and whether each call was planned. `--runs N` runs it N times, each on a fresh server, and
prints the target figure's median. The timeline goes to the JSON (`--json`).

Workers are bench.ours.worker_command's `jobsctl worker` processes (the `jobs` of this interpreter's
environment), as bench's drain starts them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from bench import ours, workload
from bench.cluster import DURABLE, DURABLE_DIR, STATS
from bench.drain import spawn, stop
from bench.sqlq import sql

TARGET = 0.90
# `--statements`: the cost suite's counters, with planning counted (a plan each call or a cached one).
STATEMENTS = STATS | {"pg_stat_statements.track_planning": "on"}


@dataclass
class Sample:
    t: float  # seconds since the start
    phase: str
    completed: int  # in the second before t
    depth: int
    tables: dict[str, dict[str, int]] = field(default_factory=dict)
    # Each minute's first sample: the server's counters and the CPU seconds spent so far (held).
    counters: dict[str, float] = field(default_factory=dict)
    # ... and every statement's counters so far, by queryid (held --statements).
    statements: dict[str, dict[str, Any]] = field(default_factory=dict)


def _cpu_seconds(pids: list[int]) -> tuple[float, float]:
    """(the CPU seconds of the processes ``pids``, of the whole machine) so far, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    mine = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        mine += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    total = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    busy = sum(int(v) for v in total[:3]) + sum(int(v) for v in total[5:8])  # all but idle and iowait
    return mine, busy / tick


class Producer:
    """Enqueues no-op jobs through the public API: at a rate, or topping up to a depth."""

    def __init__(self, dsn: str) -> None:
        from engine.api import connect

        self.eng = connect(dsn, pool_size=4)
        self.n = 0
        self.stopped = False

    async def _batch(self, k: int) -> None:
        from engine.api import Enqueue

        specs = [Enqueue(workload.noop, {"i": self.n + j}) for j in range(k)]
        self.n += k
        await self.eng.aenqueue_many(specs)

    async def at_rate(self, rate: float) -> None:
        tick, owed, t0 = 0.05, 0.0, time.perf_counter()
        sent = 0
        while not self.stopped:
            owed = rate * (time.perf_counter() - t0) - sent
            if owed >= 1:
                k = int(owed)
                await self._batch(k)
                sent += k
            await asyncio.sleep(tick)

    async def held(self, dsn: str, depth: int) -> None:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            while not self.stopped:
                row = await (await conn.execute(sql("pressure_depth"))).fetchone()  # type: ignore[arg-type]
                missing = depth - (row[0] if row else 0)
                while missing > 0:
                    k = min(missing, 1000)
                    await self._batch(k)
                    missing -= k
                await asyncio.sleep(0.1)

    async def close(self) -> None:
        await self.eng.aclose()


async def _idle_tx(dsn: str, until: asyncio.Event) -> None:
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        await conn.execute(sql("pressure_hold_xid"))  # type: ignore[arg-type]
        await until.wait()  # idle in transaction, the xid held
        await conn.rollback()


async def _rr_reader(dsn: str, until: asyncio.Event) -> None:
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        await conn.set_isolation_level(psycopg.IsolationLevel.REPEATABLE_READ)
        while not until.is_set():  # one transaction, one snapshot, for the whole phase
            await conn.execute(sql("pressure_read"))  # type: ignore[arg-type]
            try:
                await asyncio.wait_for(until.wait(), 0.2)
            except TimeoutError:
                pass
        await conn.rollback()


async def _sample(
    dsn: str,
    start: float,
    phase: dict[str, str],
    out: list[Sample],
    stop_at: asyncio.Event,
    pids: list[int],
    statements: bool,
) -> None:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        nxt = time.time() + 1
        while not stop_at.is_set():
            await asyncio.sleep(max(0.0, nxt - time.time()))
            # The second before last: the acks stamped in it have all committed by now.
            hi = datetime.fromtimestamp(nxt - 1, UTC)
            lo = hi - timedelta(seconds=1)
            nxt += 1
            done = await (await conn.execute(sql("pressure_completed"), {"lo": lo, "hi": hi})).fetchone()  # type: ignore[arg-type]
            depth = await (await conn.execute(sql("pressure_depth"))).fetchone()  # type: ignore[arg-type]
            tabs = await (await conn.execute(sql("pressure_dead_tuples"))).fetchall()  # type: ignore[arg-type]
            out.append(
                Sample(
                    round(hi.timestamp() - start, 1),
                    phase["now"],
                    done[0] if done else 0,
                    depth[0] if depth else 0,
                    {r[0]: dict(zip(("dead", "live", "heap", "indexes", "autovacuums"), r[1:])) for r in tabs},
                )
            )
            if len(out) % 60 == 1:
                cur = await conn.execute(sql("pressure_server_counters"))  # type: ignore[arg-type]
                row = await cur.fetchone()
                names = [c.name for c in cur.description or ()]
                workers_cpu, machine_cpu = _cpu_seconds(pids)
                out[-1].counters = {
                    **dict(zip(names, row or ())),
                    "workers_cpu": workers_cpu,
                    "harness_cpu": time.process_time(),
                    "cpu": machine_cpu,
                }
                if statements:
                    cur = await conn.execute(sql("pressure_statements"))  # type: ignore[arg-type]
                    names = [c.name for c in cur.description or ()]
                    out[-1].statements = {r[0]: dict(zip(names[1:], r[1:])) for r in await cur.fetchall()}


async def _claim_wait(dsn: str, lo: float, hi: float) -> tuple[float | None, float | None]:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        row = await (
            await conn.execute(
                sql("pressure_claim_wait"),  # type: ignore[arg-type]
                {"lo": datetime.fromtimestamp(lo, UTC), "hi": datetime.fromtimestamp(hi, UTC)},
            )
        ).fetchone()
    return (row[0], row[1]) if row else (None, None)


async def run(args: argparse.Namespace, dsn: str) -> dict[str, Any]:
    command = [
        *ours.worker_command(dsn, concurrency=args.concurrency, batch_size=args.concurrency),
        *args.worker_option,
    ]
    procs = [spawn(command) for _ in range(args.workers)]
    producer = Producer(dsn)
    samples: list[Sample] = []
    phase = {"now": "warm-up"}
    done = asyncio.Event()
    try:
        if args.scenario == "held":
            feeding = asyncio.create_task(producer.held(dsn, args.depth))
            phases = [("held", args.minutes * 60.0)]
        else:
            feeding = asyncio.create_task(producer.at_rate(args.rate))
            phases = [("clean", args.clean), ("pressure", args.pressure), ("recovery", args.recovery)]
        await asyncio.sleep(args.warm)
        start = time.time()
        pids = [p.pid for p, _ in procs]
        sampler = asyncio.create_task(_sample(dsn, start, phase, samples, done, pids, args.statements))
        bounds: dict[str, tuple[float, float]] = {}
        for name, seconds in phases:
            phase["now"] = name
            t0 = time.time()
            if name == "pressure":
                until = asyncio.Event()
                kind = _idle_tx if args.scenario == "idle-tx" else _rr_reader
                held = [asyncio.create_task(kind(dsn, until)) for _ in range(args.sessions)]
                await asyncio.sleep(seconds)
                until.set()
                await asyncio.gather(*held)
            else:
                await asyncio.sleep(seconds)
            bounds[name] = (t0, time.time())
        done.set()
        await sampler
        producer.stopped = True
        await feeding
        waits = {name: await _claim_wait(dsn, lo, hi) for name, (lo, hi) in bounds.items()}
    finally:
        producer.stopped = True
        await producer.close()
        stop(procs)
    return _report(args, samples, bounds, waits, start)


def _report(
    args: argparse.Namespace,
    samples: list[Sample],
    bounds: dict[str, tuple[float, float]],
    waits: dict[str, tuple[float | None, float | None]],
    start: float,
) -> dict[str, Any]:
    phases: dict[str, dict[str, Any]] = {}
    for name, (lo, hi) in bounds.items():
        mine = [s for s in samples if lo - start < s.t <= hi - start]
        if not mine:
            continue
        dead = {t: max(s.tables.get(t, {}).get("dead", 0) for s in mine) for t in ("job", "job_done")}
        phases[name] = {
            "seconds": round(hi - lo, 1),
            "rate": sum(s.completed for s in mine) / len(mine),
            "max_depth": max(s.depth for s in mine),
            "claim_wait_p50_ms": waits[name][0],
            "claim_wait_p99_ms": waits[name][1],
            "max_dead_tuples": dead,
            "end_tables": mine[-1].tables,
        }
    out: dict[str, Any] = {"scenario": args.scenario, "phases": phases}
    if "clean" in phases and "pressure" in phases and phases["clean"]["rate"]:
        out["pressure_over_clean"] = phases["pressure"]["rate"] / phases["clean"]["rate"]
    if args.scenario == "held":
        minutes = [samples[i : i + 60] for i in range(0, len(samples), 60)]
        out["minutes"] = [
            {
                "minute": k,
                "rate": statistics.mean(s.completed for s in m),
                "depth": statistics.median(s.depth for s in m),
                "dead": {t: m[-1].tables.get(t, {}).get("dead", 0) for t in ("job", "job_done")},
                "bytes": {
                    t: m[-1].tables.get(t, {}).get("heap", 0) + m[-1].tables.get(t, {}).get("indexes", 0)
                    for t in ("job", "job_done")
                },
            }
            for k, m in enumerate(minutes)
            if m
        ]
        for k, m in enumerate(out["minutes"]):  # each minute's counters: the deltas to the next minute's
            a, b = minutes[k][0].counters, (minutes[k + 1][0].counters if k + 1 < len(minutes) else {})
            if a and b:
                m["server"] = {name: b[name] - a[name] for name in a}
            sa, sb = minutes[k][0].statements, (minutes[k + 1][0].statements if k + 1 < len(minutes) else {})
            if sa and sb:
                m["statements"] = _statement_deltas(sa, sb)
        rates = [m["rate"] for m in out["minutes"]]
        if len(rates) >= 4:
            out["last_over_first"] = statistics.mean(rates[-3:]) / statistics.mean(rates[:3])
    out["timeline"] = [s.__dict__ for s in samples]
    return out


def _statement_deltas(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each statement's calls, plans and times over one minute (``b`` minus ``a``), called in it."""
    out: dict[str, dict[str, Any]] = {}
    for qid, now in b.items():
        was = a.get(qid, {})
        calls = now["calls"] - was.get("calls", 0)
        if calls:
            d = {k: now[k] - was.get(k, 0) for k in ("calls", "exec_ms", "plans", "plan_ms", "hits")}
            out[qid] = {"query": now["query"], **d}
    return out


def _print_statements(minutes: list[dict[str, Any]]) -> None:
    """The statements taking the most server time: per minute, the time a call (us) and the share
    of calls planned (1.00: a custom plan each call; near 0: a cached generic plan)."""
    timed = [m for m in minutes if "statements" in m]
    if not timed:
        return
    total: dict[str, float] = {}
    for m in timed:
        for qid, s in m["statements"].items():
            total[qid] = total.get(qid, 0.0) + s["exec_ms"] + s["plan_ms"]
    print("statements by server time (per minute: us a call, exec + plan / share of calls planned / hits a call)")
    for qid in sorted(total, key=total.__getitem__, reverse=True)[:8]:
        query = next(m["statements"][qid]["query"] for m in timed if qid in m["statements"])
        print(f"  {total[qid] / 1000:7.1f} s  {query[:110]}")
        cells = []
        for m in timed:
            s = m["statements"].get(qid)
            if s:
                us = (s["exec_ms"] + s["plan_ms"]) * 1000 / s["calls"]
                cells.append(f"{m['minute']}:{us:.0f}/{s['plans'] / s['calls']:.2f}/{s['hits'] / s['calls']:.0f}")
        for i in range(0, len(cells), 6):
            print("      " + "  ".join(cells[i : i + 6]))


def _print(doc: dict[str, Any]) -> None:
    print(f"scenario {doc['scenario']}")
    print(
        f"{'phase':<10} {'s':>5} {'jobs/s':>8} {'max depth':>10} {'wait p50':>9} {'wait p99':>9}  max dead (job / job_done)"
    )
    for name, p in doc["phases"].items():
        d = p["max_dead_tuples"]
        p50, p99 = p["claim_wait_p50_ms"], p["claim_wait_p99_ms"]
        print(
            f"{name:<10} {p['seconds']:5.0f} {p['rate']:8.1f} {p['max_depth']:10,} "
            f"{(p50 or 0):8.1f}ms {(p99 or 0):8.1f}ms  {d['job']:,} / {d['job_done']:,}"
        )
    if "pressure_over_clean" in doc:
        ratio = doc["pressure_over_clean"]
        print(f"pressure / clean: {ratio:.2f} (target >= {TARGET:.2f}: {'met' if ratio >= TARGET else 'MISSED'})")
    for m in doc.get("minutes", []):
        print(
            f"minute {m['minute']:>3}: {m['rate']:8.1f} jobs/s, depth {m['depth']:>7,.0f}, "
            f"dead {m['dead']['job']:>8,} / {m['dead']['job_done']:>8,}, "
            f"MB {m['bytes']['job'] / 1e6:7.1f} / {m['bytes']['job_done'] / 1e6:7.1f}"
        )
        if "server" in m:  # per second over the minute
            d = {k: v / 60 for k, v in m["server"].items()}
            print(
                f"            read {d['blks_read']:8,.0f}/s  hit {d['blks_hit']:9,.0f}/s  checkpoints {m['server']['checkpoints']:.0f}"
                f"  backend writes {d['buffers_backend']:6,.0f}/s  WAL {d['wal_bytes'] / 1e6:6.1f} MB/s"
                f"  FPI {d['wal_fpi']:6,.0f}/s  CPU: workers {d['workers_cpu']:.2f}, harness {d['harness_cpu']:.2f}, "
                f"rest {d['cpu'] - d['workers_cpu'] - d['harness_cpu']:.2f} cores"
            )
    _print_statements(doc.get("minutes", []))
    if "last_over_first" in doc:
        print(f"last 3 minutes / first 3: {doc['last_over_first']:.3f} (target >= 0.90)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.pressure", description=__doc__)
    ap.add_argument("--scenario", choices=("idle-tx", "rr-readers", "held"), required=True)
    ap.add_argument("--rate", type=float, default=800.0, help="offered jobs/s (idle-tx, rr-readers)")
    ap.add_argument("--clean", type=float, default=60.0)
    ap.add_argument("--pressure", type=float, default=240.0)
    ap.add_argument("--recovery", type=float, default=60.0)
    ap.add_argument("--sessions", type=int, default=None, help="pressure sessions (idle-tx 1, rr-readers 4)")
    ap.add_argument("--depth", type=int, default=4000, help="held: the ready backlog kept")
    ap.add_argument("--minutes", type=float, default=30.0, help="held: how long")
    ap.add_argument("--workers", type=int, default=2, help="worker processes")
    ap.add_argument("--concurrency", type=int, default=16, help="slots per worker process")
    ap.add_argument("--warm", type=float, default=5.0, help="seconds before the first phase")
    ap.add_argument("--durable", action="store_true")
    ap.add_argument("--runs", type=int, default=1, help="runs in this invocation, each on a fresh server; the median")
    ap.add_argument(
        "--statements",
        action="store_true",
        help="held: load pg_stat_statements and print, per minute, the time a call of the costliest statements",
    )
    ap.add_argument("--base-dir", default=None, help="where the cluster lives (default: tmpfs; --durable: /var/tmp)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--setting", action="append", default=[], metavar="NAME=VALUE", help="a server setting (autovacuum_naptime=5s)"
    )
    ap.add_argument(
        "--worker-option",
        action="append",
        default=[],
        metavar="OPTION",
        help="an option of `jobsctl worker`, as one argument: --worker-option=--vacuum-threshold=0",
    )
    args = ap.parse_args(argv)
    if args.sessions is None:
        args.sessions = 1 if args.scenario == "idle-tx" else 4
    docs = []
    for i in range(1, args.runs + 1):  # each run printed as it ends: a held run takes its minutes
        docs.append(_one_run(args))
        print(f"run {i} of {args.runs}")
        _print(docs[-1])
        print(flush=True)
    key = "last_over_first" if args.scenario == "held" else "pressure_over_clean"
    figures = [d[key] for d in docs if key in d]  # held: only over 4 minutes or more
    if figures:
        print(f"{key}: {', '.join(f'{f:.3f}' for f in figures)}; median {statistics.median(figures):.3f}")
    if args.json:
        out = docs[0] if args.runs == 1 else {"runs": docs, key: statistics.median(figures) if figures else None}
        args.json.write_text(json.dumps(out, indent=1, default=str), encoding="utf-8")
    return 0


def _one_run(args: argparse.Namespace) -> dict[str, Any]:
    """One run on a fresh server: the timeline and its figures, ``args`` recorded in it."""
    from engine.schema import install_schema
    from engine.testing import EmbeddedPostgres, create_database

    pg = EmbeddedPostgres(
        max_connections=100,
        settings=(DURABLE if args.durable else {})
        | (STATEMENTS if args.statements else {})
        | dict(kv.split("=", 1) for kv in args.setting),
        base_dir=args.base_dir or (DURABLE_DIR if args.durable else None),
    )
    try:
        dsn = create_database(pg.start(), "pressure")
        install_schema(dsn)
        if args.statements:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(sql("pressure_statements_install"))  # type: ignore[arg-type]
        doc = asyncio.run(run(args, dsn))
    finally:
        pg.close()
    return doc | {"args": {k: v for k, v in vars(args).items() if k != "json"}}


if __name__ == "__main__":
    raise SystemExit(main())
