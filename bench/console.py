"""The console's cost on a big database: `python -m bench.console [--jobs 1000000] [--refreshes 1800]`.

With ``--jobs`` rows in jobs.job (the mix the projections bench names: 95% completed, 3% dead,
2% live, 50 names, 20 tenants, 5 queues; sql/bench/console.sql), it measures, each in a fresh child
process so the seeding's memory never counts:

- open: from spawning `jobs-console --dsn ...`'s code path (interpreter start, imports, connect,
  schema check, first query, first render) to the Overview drawn with data. Target < 1.5 s.
- CPU per refresh of each screen: the process CPU time (every thread: query, decode, projection,
  widget update, render) of one refresh, over many refreshes. Target < 100 ms.
- RSS after many refreshes: ``--refreshes`` refresh cycles back to back (1800 = one hour at the
  default 2 s interval, every cycle refreshing one screen in turn), sampled along the way; the
  figure past what was run is a linear extrapolation, and the report says so. Target < 150 MB.

The console runs headless (Textual's test driver) at 120x40: rendering is real, only the
terminal write is skipped.
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

SCREENS = ("overview", "jobs", "dead_letters", "workers", "job_detail", "why")
SIZE = (120, 40)
PER_VISIT = 25  # refreshes of a screen before the bench moves to the next


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


# --- the child: one console process ----------------------------------------------------------


async def _first_screen(source: Any, spawned_at: float) -> dict[str, Any]:
    from console.cli import Options, make_app

    app = make_app(source, Options(read_only=True))
    async with app.run_test(size=SIZE) as pilot:
        while app.last_refresh is None:  # the bench polls; tests never do
            await pilot.pause(0.005)
        await pilot.pause()  # the loaded rows are rendered
        drawn = time.time()
    await source.engine.aclose()
    return {"open_s": drawn - spawned_at, "rss_mb": rss_mb()}


async def _settle(app: Any, pilot: Any) -> None:
    """Every data load finished (a cancelled, superseded load counts as finished) and painted."""
    for _ in range(3):
        await pilot.pause()
        await asyncio.gather(*(w.wait() for w in list(app.workers)), return_exceptions=True)
    await pilot.pause()


async def _open_screen(app: Any, pilot: Any, name: str, job_id: str | None) -> Any:
    if name in ("overview", "jobs", "dead_letters", "workers"):
        await app.switch_mode(name)
    elif name == "job_detail":
        from console.screens.job_detail import JobDetailScreen

        await app.switch_mode("jobs")
        await app.push_screen(JobDetailScreen(job_id))
    elif name == "why":
        from console.screens.why import WhyScreen

        await app.switch_mode("jobs")
        await app.push_screen(WhyScreen(job_id=job_id))
    await _settle(app, pilot)
    return app.screen


async def _refreshes(source: Any, refreshes: int) -> dict[str, Any]:
    from console.cli import Options, make_app

    job_id = await _a_dead_job(source)
    app = make_app(source, Options(refresh=3600.0, read_only=True))  # no timer fires: we drive
    cpu: dict[str, list[float]] = {s: [] for s in SCREENS}
    wall: dict[str, list[float]] = {s: [] for s in SCREENS}
    samples: list[tuple[int, float]] = []
    async with app.run_test(size=SIZE) as pilot:
        await _settle(app, pilot)
        samples.append((0, rss_mb()))
        done = 0
        rounds = 0
        while done < refreshes:  # each screen in turn, refreshed where it stands, as on its timer
            rounds += 1
            for name in SCREENS:
                screen = await _open_screen(app, pilot, name, job_id)
                for _ in range(min(PER_VISIT, refreshes - done)):
                    c0, w0 = time.process_time(), time.perf_counter()
                    screen.reload()
                    await _settle(app, pilot)
                    cpu[name].append(time.process_time() - c0)
                    wall[name].append(time.perf_counter() - w0)
                    done += 1
                    if done % 100 == 0:
                        samples.append((done, rss_mb()))
                if name in ("job_detail", "why"):
                    await app.pop_screen()
    await source.engine.aclose()
    samples.append((done, rss_mb()))
    return {"cpu": cpu, "wall": wall, "rss": samples}


def child(argv: list[str]) -> None:
    from console.cli import Options, open_source

    mode, dsn = argv[0], argv[1]
    source = open_source(dsn, Options(read_only=True))  # exactly what `jobs-console --dsn` runs first
    if mode == "open":
        out = asyncio.run(_first_screen(source, float(argv[2])))
    else:
        out = asyncio.run(_refreshes(source, int(argv[2])))
    sys.stdout.write(json.dumps(out) + "\n")


def _spawn(*args: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    env.pop("NO_COLOR", None)
    done = subprocess.run(
        [sys.executable, "-m", "bench.console", "--child", *args], capture_output=True, text=True, env=env, timeout=3600
    )
    if done.returncode != 0:
        raise SystemExit(f"bench child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the parent: a database, the seed, the runs ----------------------------------------------


def seed(dsn: str, jobs: int) -> float:
    """Fill jobs.job with the projections bench's mix (sql/bench/console.sql, in batches of 100k
    rows); answer the seconds it took."""
    from datetime import UTC, datetime

    import psycopg

    from bench.sqlq import sql

    started = time.perf_counter()
    now = datetime.now(UTC)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for first in range(1, jobs + 1, 100_000):
            conn.execute(
                sql("console_bench_seed_jobs"), {"first": first, "last": min(jobs, first + 99_999), "now": now}
            )
            conn.execute(sql("bench_settle_seeded"))
        conn.execute(sql("bench_compact_live"))
        conn.execute(sql("console_bench_analyze"))
    return time.perf_counter() - started


async def _a_dead_job(source: Any) -> str | None:
    """The job the detail and why screens show: a dead letter, found the way an operator would."""
    from engine.projections import JobFilter
    from engine.types import JobState

    page = await source.jobs(JobFilter(state=JobState.DEAD), limit=1)
    return page.items[0].id if page.items else None


def _ms(values: list[float]) -> dict[str, float]:
    xs = sorted(v * 1000 for v in values)
    if not xs:
        return {}
    return {
        "median": round(statistics.median(xs), 1),
        "p95": round(xs[int(len(xs) * 0.95) - 1 if len(xs) > 1 else 0], 1),
        "max": round(xs[-1], 1),
        "n": len(xs),
    }


def report(res: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [
        f"jobs-console on {args.jobs:,} jobs (python -m bench.console --jobs {args.jobs} --refreshes {args.refreshes})",
        "",
    ]
    opens = res["open"]
    lines.append(
        f"open to first screen: median {statistics.median(opens):.2f} s, max {max(opens):.2f} s over {len(opens)} "
        f"runs (target < 1.5 s)"
    )
    lines.append("CPU per refresh (ms, whole process; target < 100):")
    for name in SCREENS:
        c, w = _ms(res["refresh"]["cpu"][name]), _ms(res["refresh"]["wall"][name])
        if c:
            lines.append(
                f"  {name:<13} cpu median {c['median']:>6} p95 {c['p95']:>6} max {c['max']:>6}   wall median "
                f"{w['median']:>6}  (n={c['n']})"
            )
    rss = res["refresh"]["rss"]
    (n0, r0), (n1, r1) = rss[1] if len(rss) > 1 else rss[0], rss[-1]
    slope = (r1 - r0) / (n1 - n0) if n1 > n0 else 0.0
    hour = 1800  # refreshes in an hour at the default 2 s interval
    projected = r1 + slope * max(0, hour - n1)
    lines.append(
        f"RSS: {rss[0][1]:.0f} MB open, {r1:.0f} MB after {n1} refreshes; growth {slope * 1000:.1f} kB/refresh"
        + (
            f"; extrapolated to {hour} refreshes (1 h at 2 s): {projected:.0f} MB"
            if n1 < hour
            else " (a full hour's worth was run)"
        )
        + " (target < 150 MB)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        child(argv[1:])
        return
    p = argparse.ArgumentParser(prog="python -m bench.console", description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=1_000_000)
    p.add_argument("--refreshes", type=int, default=1800)
    p.add_argument("--opens", type=int, default=5)
    p.add_argument("--dsn", help="use this database (already seeded) instead of a throwaway one")
    args = p.parse_args(argv)

    from engine.schema import install_schema
    from engine.testing import EmbeddedPostgres

    cluster = None
    try:
        if args.dsn:
            dsn = args.dsn
        else:
            cluster = EmbeddedPostgres(settings={"shared_buffers": "256MB", "work_mem": "16MB"})
            cluster.start()
            dsn = cluster.create_database("console_bench")
            install_schema(dsn)
            took = seed(dsn, args.jobs)
            print(f"seeded {args.jobs:,} jobs in {took:.0f} s", file=sys.stderr)
        res: dict[str, Any] = {"open": [], "refresh": None}
        for _ in range(args.opens):
            res["open"].append(_spawn("open", dsn, repr(time.time()))["open_s"])
        res["refresh"] = _spawn("refresh", dsn, str(args.refreshes))
        text = report(res, args)
        print(text)
        os.makedirs("bench/results", exist_ok=True)
        with open("bench/results/console.json", "w") as f:
            json.dump({"args": vars(args), **res}, f)
    finally:
        if cluster is not None:
            cluster.close()


if __name__ == "__main__":
    main()
