"""`python -m bench [--quick] [--only enqueue,drain,...] [--runs N] [--drain-jobs N] [--json PATH]`."""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from dataclasses import replace
from importlib import metadata
from pathlib import Path

from bench.cluster import BenchCluster
from bench.plan import FULL, QUICK
from bench.report import table, write_json
from bench.stats import Results
from bench.suites import SUITES


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def best_of(res: Results) -> None:
    """`drain.p1@200`, `drain.p1@400` ...: the best median becomes `drain.p1` (its settings noted),
    and the CPU a job of that same setting `drain.p1.cpu` (the others' are dropped)."""
    swept: dict[tuple[str, str], list[str]] = {}
    for key, system in list(res.figures):
        if "@" in key:
            swept.setdefault((key.split("@")[0], system), []).append(key)
    for (base, system), keys in swept.items():
        if base.endswith(".cpu"):
            continue  # follows its rate's choice
        figs = [res.figures.pop((k, system)) for k in keys]
        best = max(figs, key=lambda f: f.median)
        label = keys[figs.index(best)].split("@", 1)[1]
        others = ", ".join(f"{f.note}: {f.median:,.0f}" for f in figs if f is not best)
        best.key = base
        best.note = f"best of sweep, {best.note}" + (f" (also {others})" if others else "")
        res.put(best)
        for k in swept.get((f"{base}.cpu", system), []):
            cpu = res.figures.pop((k, system))
            if k.split("@", 1)[1] == label:
                cpu.key, cpu.note = f"{base}.cpu", best.note
                res.put(cpu)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="reduced sizes, one run: for CI (never judged on speed)")
    ap.add_argument("--only", default=",".join(SUITES), help=f"comma-separated suites: {','.join(SUITES)}")
    ap.add_argument("--runs", type=int, default=None, help="runs per figure (default 3, quick 1)")
    ap.add_argument("--json", type=Path, default=None, help="where to write the JSON (default bench/results/)")
    ap.add_argument(
        "--durable",
        action="store_true",
        help="fsync, synchronous_commit and full_page_writes on (PostgreSQL's defaults) instead of off",
    )
    ap.add_argument(
        "--drain-jobs",
        type=int,
        default=None,
        help="jobs each drain run empties (default 20,000; quick 1,000): a larger one amortises process start",
    )
    args = ap.parse_args(argv)
    plan = QUICK if args.quick else FULL
    if args.runs is not None:
        if args.runs < 1:
            ap.error("--runs must be >= 1")
        plan = replace(plan, runs=args.runs)
    if args.drain_jobs is not None:
        if args.drain_jobs < 1:
            ap.error("--drain-jobs must be >= 1")
        plan = replace(plan, drain=args.drain_jobs)
    chosen = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in SUITES]
    if unknown:
        ap.error(f"unknown suite {unknown[0]!r}; choose from {','.join(SUITES)}")
    res = Results()
    cluster = BenchCluster(durable=args.durable, stats="costs" in chosen)
    started = time.time()
    try:
        cluster.start()
        timings: dict[str, float] = {}
        for name in chosen:
            t0 = time.perf_counter()
            try:
                SUITES[name](cluster, plan, res)
            except Exception as exc:  # what was measured so far is still printed and written
                res.errors.append(f"suite {name}: {type(exc).__name__}: {str(exc).strip()[:300]}")
                print(f"# suite {name} FAILED: {exc!r}"[:400], file=sys.stderr, flush=True)
            timings[name] = round(time.perf_counter() - t0, 2)
            print(f"# {name}: {timings[name]:.1f} s", file=sys.stderr, flush=True)
        best_of(res)
        meta = {
            "command": " ".join(["python -m bench", *(argv if argv is not None else sys.argv[1:])]),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "quick": args.quick,
            "durable": args.durable,
            "plan": plan.__dict__,
            "suite_seconds": timings,
            "python": platform.python_version(),
            "postgres": cluster.server_version(),
            "psycopg": _version("psycopg"),
            "pgqueuer": _version("pgqueuer"),
            "asyncpg": _version("asyncpg"),
            "uvloop": _version("uvloop"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        }
    finally:
        cluster.close()
    print(table(res))
    path = write_json(res, meta, args.json)
    print(f"\nJSON: {path}")
    return 0
