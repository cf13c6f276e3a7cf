"""The soak: real `jobsctl worker` processes under a steady enqueue rate for a long while, watched.

Every ``sample`` seconds it records: jobs started a second, the enqueue-to-start latency (p50,
p99) of the jobs started in that window, each worker's resident memory, and the jobs table's
dead tuples, live tuples and size. The workers prune completed jobs after ``retention`` seconds
(`jobsctl worker --retention`), so a table that keeps its size is the pruner and autovacuum keeping
up, and a flat resident memory is a worker that leaks nothing. Nothing is faulted here: that is
bench/torture's job.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.rows import dict_row

from bench import workload
from bench.drain import ROOT, compile_tree
from bench.latency import Collector, percentile
from bench.torture.sqlq import sql
from engine.api import connect
from engine.testing import EmbeddedPostgres, create_database, install


@dataclass
class SoakConfig:
    seconds: float = 60.0
    rate: float = 200.0  # enqueues a second
    workers: int = 2
    concurrency: int = 50
    retention: float = 30.0  # seconds completed jobs are kept (the pruner's)
    sample: float = 5.0  # seconds between samples
    maintenance_interval: float = 2.0
    reindex_interval: float = 60.0  # the leader's GIN checks (jobsctl worker --reindex-interval)
    reindex_min_mb: float = 4.0  # ... and the smallest it rebuilds (--reindex-min-mb)


@dataclass
class Sample:
    at: float  # seconds from the start of the load
    started: int  # jobs started in the window
    per_second: float
    p50_ms: float | None
    p99_ms: float | None
    rss_mb: tuple[float, ...]  # each worker's
    dead_tuples: int
    live_tuples: int
    table_mb: float
    autovacuums: int
    sizes_mb: dict[str, float] = field(default_factory=dict)  # the heap and each index


@dataclass
class SoakReport:
    config: SoakConfig
    samples: list[Sample]
    enqueued: int
    started: int  # jobs whose start a worker reported (every enqueued one, when nothing was lost)
    p50_ms: float
    p99_ms: float
    elapsed: float
    extra: dict[str, Any] = field(default_factory=dict)

    def window_rate(self, a: float, b: float) -> float | None:
        picked = [s for s in self.samples if a < s.at <= b]
        if not picked:
            return None
        span = picked[-1].at - (picked[0].at - self.config.sample)
        return sum(s.started for s in picked) / span if span > 0 else None

    def summary(self) -> dict[str, Any]:
        cfg = self.config
        # The first minute against the minute after 30 (a run of 31 minutes or more), else the
        # run's last minute; a short run compares its first and last thirds.
        span = min(60.0, cfg.seconds / 3)
        first = self.window_rate(0, span)
        late_at = 30 * 60 if cfg.seconds >= 31 * 60 else cfg.seconds - span
        late = self.window_rate(late_at, late_at + span)
        warm = [s for s in self.samples if s.at > min(60.0, cfg.seconds / 3)]
        rss_start = warm[0].rss_mb if warm else ()
        rss_end = warm[-1].rss_mb if warm else ()
        third = [s for s in self.samples if s.at >= cfg.seconds / 3]
        return {
            "throughput_first_minute": first,
            "throughput_late_minute": late,
            "late_minute_starts_at": late_at,
            "window": span,
            "throughput_ratio": (late / first) if first and late else None,
            "rss_mb_warm": rss_start,
            "rss_mb_end": rss_end,
            "rss_growth_mb": tuple(round(b - a, 1) for a, b in zip(rss_start, rss_end)),
            "dead_tuples_max": max((s.dead_tuples for s in self.samples), default=0),
            "table_mb_at_third": third[0].table_mb if third else None,
            "table_mb_end": self.samples[-1].table_mb if self.samples else None,
            "table_mb_max": max((s.table_mb for s in self.samples), default=0.0),
            "sizes_mb": {
                name: (third[0].sizes_mb.get(name, 0.0), self.samples[-1].sizes_mb.get(name, 0.0))
                for name in (self.samples[-1].sizes_mb if self.samples and third else {})
            },
        }

    def lines(self) -> list[str]:
        cfg = self.config
        out = [
            f"soak: {cfg.seconds:g} s at {cfg.rate:g} jobs/s, {cfg.workers} `jobsctl worker` processes (concurrency "
            f"{cfg.concurrency}, --retention {cfg.retention:g}, --reindex-interval {cfg.reindex_interval:g} "
            f"--reindex-min-mb {cfg.reindex_min_mb:g}), a sample every {cfg.sample:g} s",
            f"{'t (s)':>7} {'jobs/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'RSS MB (each worker)':>22} {'dead tup':>9} "
            f"{'live tup':>9} {'table MB':>9} {'autovac':>7}",
        ]
        for s in self.samples:
            rss = " ".join(f"{r:.1f}" for r in s.rss_mb)
            p50 = f"{s.p50_ms:.1f}" if s.p50_ms is not None else "-"
            p99 = f"{s.p99_ms:.1f}" if s.p99_ms is not None else "-"
            out.append(
                f"{s.at:7.0f} {s.per_second:7.1f} {p50:>7} {p99:>7} {rss:>22} {s.dead_tuples:9d} {s.live_tuples:9d} "
                f"{s.table_mb:9.1f} {s.autovacuums:7d}"
            )
        m = self.summary()

        def f(v: Any, spec: str = ".1f") -> str:
            return format(v, spec) if isinstance(v, (int, float)) else "-"

        out += [
            f"enqueued {self.enqueued}, started {self.started} (lost: {max(0, self.enqueued - self.started)})",
            f"latency enqueue-to-start over the run: p50 {self.p50_ms:.1f} ms, p99 {self.p99_ms:.1f} ms",
            f"throughput: first {m['window']:.0f} s {f(m['throughput_first_minute'])}/s, the {m['window']:.0f} s "
            f"from {m['late_minute_starts_at']:.0f} s {f(m['throughput_late_minute'])}/s, ratio "
            f"{f(m['throughput_ratio'], '.3f')}",
            f"worker RSS MB warm {m['rss_mb_warm']} -> end {m['rss_mb_end']} (growth {m['rss_growth_mb']})",
            f"jobs table: dead tuples at most {m['dead_tuples_max']}; size {f(m['table_mb_at_third'])} MB at a third, "
            f"{f(m['table_mb_end'])} MB at the end, {f(m['table_mb_max'])} MB at most",
            "  from a third to the end, MB: "
            + ", ".join(f"{name} {a:.1f} -> {b:.1f}" for name, (a, b) in m["sizes_mb"].items()),
        ]
        return out


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def worker_command(cfg: SoakConfig) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from engine.cli import main; main()",
        "worker",
        "bench.workload",
        "--queues",
        workload.QUEUE,
        "--concurrency",
        str(cfg.concurrency),
        "--retention",
        f"{cfg.retention:g}",
        "--maintenance-interval",
        f"{cfg.maintenance_interval:g}",
        "--reindex-interval",
        f"{cfg.reindex_interval:g}",
        "--reindex-min-mb",
        f"{cfg.reindex_min_mb:g}",
    ]


async def run_soak(cfg: SoakConfig) -> SoakReport:
    began = time.monotonic()
    pg = EmbeddedPostgres()
    col = Collector()
    procs: list[Any] = []
    try:
        dsn = create_database(await asyncio.to_thread(pg.start), "soak")
        await asyncio.to_thread(install, dsn)
        env = {**os.environ, "JOBS_DSN": dsn, "BENCH_UDP": col.path}
        import subprocess

        compile_tree()
        procs = [
            subprocess.Popen(
                worker_command(cfg), cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            for _ in range(cfg.workers)
        ]
        eng = connect(dsn, pool_size=20)
        try:
            return await _soak(cfg, dsn, eng, col, procs, began)
        finally:
            await eng.aclose()
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except Exception:
                p.kill()
        col.close()
        await asyncio.to_thread(pg.close)


async def _soak(cfg: SoakConfig, dsn: str, eng: Any, col: Collector, procs: list[Any], began: float) -> SoakReport:
    # Warm: a job at a time until a worker has started one (every worker is listening by then).
    deadline = time.monotonic() + 90
    i = -1
    while not col.samples:
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            raise RuntimeError("the soak's workers never started a job")
        await eng.aenqueue(workload.noop, {"i": i, "t": time.time()})
        i -= 1
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.0)
    col.samples.clear()
    samples: list[Sample] = []
    stats = await psycopg.AsyncConnection.connect(dsn, autocommit=True, row_factory=dict_row)
    n = 0
    tasks: set[asyncio.Task[Any]] = set()
    start = time.monotonic()
    next_sample, seen = start + cfg.sample, 0
    try:
        while True:
            now = time.monotonic()
            if now >= next_sample:
                batch, seen = col.samples[seen:], len(col.samples)
                samples.append(await _sample(cfg, now - start, batch, procs, stats))
                next_sample += cfg.sample
            if now - start >= cfg.seconds:
                break
            due = start + n / cfg.rate
            if due > now:
                await asyncio.sleep(min(due - now, max(0.0, next_sample - now)))
                continue
            t = asyncio.ensure_future(eng.aenqueue(workload.noop, {"i": n, "t": time.time()}))
            tasks.add(t)
            t.add_done_callback(tasks.discard)
            n += 1
        if tasks:
            await asyncio.gather(*tasks)
        end = time.monotonic() + 60
        while len(col.samples) < n and time.monotonic() < end:
            await asyncio.sleep(0.1)
    finally:
        await stats.close()
    lat = [(s - e) * 1000 for e, s in col.samples]
    return SoakReport(
        cfg,
        samples,
        n,
        len(col.samples),
        percentile(lat, 0.5) if lat else 0.0,
        percentile(lat, 0.99) if lat else 0.0,
        time.monotonic() - began,
    )


async def _sample(cfg: SoakConfig, at: float, batch: list[tuple[float, float]], procs: list[Any], stats: Any) -> Sample:
    lat = [(s - e) * 1000 for e, s in batch]
    row = await (await stats.execute(sql("torture_table_stats"))).fetchone()
    sizes = await (await stats.execute(sql("soak_sizes"))).fetchall()
    return Sample(
        at=at,
        started=len(batch),
        per_second=len(batch) / cfg.sample,
        p50_ms=percentile(lat, 0.5) if lat else None,
        p99_ms=percentile(lat, 0.99) if lat else None,
        rss_mb=tuple(round(rss_mb(p.pid), 1) for p in procs),
        dead_tuples=int(row["dead"]) if row else 0,
        live_tuples=int(row["live"]) if row else 0,
        table_mb=round(int(row["bytes"]) / 2**20, 2) if row else 0.0,
        autovacuums=int(row["autovacuums"]) if row else 0,
        sizes_mb={r["name"]: round(int(r["bytes"]) / 2**20, 2) for r in sizes},
    )
