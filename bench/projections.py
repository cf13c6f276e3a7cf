"""Projection timings on a big table: `python -m bench.projections [--jobs 1000000] [--runs 30]`.

Seeds jobs.job with a production-like mix (sql/bench/seed.sql: 95% completed, 3% dead, 2% live;
50 names, 20 tenants, 5 queues; attempts and steps to match; the settled rows in buckets of
200,000, SEED_BUCKET), then times every projection the
console refreshes through the real path (Introspector -> PostgresDriver -> named statements,
each under its budget), and EXPLAINs every projection statement: none may seq-scan jobs.job.
Then adds an hour at 100 jobs/s (360,000 completions in the last hour), runs the maintenance
leader's throughput rollup, and times the queues view and a queue's chart again
(queues.busy_hour, queue_series.busy_hour).
Then seeds jobs.outbox a million unpublished rows behind (sql/bench/outbox_seed.sql: some held
by three live relays, some failing, 200,000 published as the audit trail) and times the outbox
screen's figures: its view (outbox.view), its rows with the why of each (outbox.rows; both together:
outbox.screen) and a staged row's "why isn't it published" (outbox.why.*).
Last, a flood of dead letters (sql/bench/seed.sql bench_flood_dead: every completed row dead) and
the dead-letter view over it, whole and for one tenant (dead_letters.flood, dead_letters.flood.tenant).
Targets: each console projection < 50 ms, a list page < 20 ms (median). Prints a table and JSON.
`run(dsn=..., jobs=..., runs=...)` is what `python -m bench` calls.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from datetime import UTC, datetime
from typing import Any

import psycopg

from bench.sqlq import bench_queries

PAGE_TARGET_MS, VIEW_TARGET_MS = 20.0, 50.0
BUSY_HOUR = 360_000  # completions in the last hour for queues.busy_hour: 100 jobs/s
OUTBOX_UNPUBLISHED, OUTBOX_PUBLISHED = 1_000_000, 200_000
# Settled rows a bucket holds in the seed: 1,000,000 jobs leave four sealed buckets and the open
# one, as a fleet keeps them (a bucket is open for a quarter of the retention).
SEED_BUCKET = 200_000
LIVE_PERCENT = 2  # of the seeded rows; --live-percent 50: a backlog of 500,000 ready rows at 1,000,000


def live_refusal(live: int) -> str | None:
    """Why ``live`` percent of live rows cannot be seeded, or None: the one range, for seed() and
    the command line (which refuses before a server starts)."""
    return None if 2 <= live <= 90 else f"--live-percent {live}: must be within 2..90 (--live-percent 50)"


def seed(dsn: str, jobs: int, *, upgraded: bool = False, live: int = LIVE_PERCENT) -> float:
    """Seed ``jobs`` rows, ``live`` percent of them live (past 2%: a backlog of ready rows).
    ``upgraded``: leave jobs.job's heap and indexes as an upgrade from the one-table schema leaves
    them (sized for every row until they are rebuilt) instead of compact."""
    if refusal := live_refusal(live):
        raise ValueError(refusal)
    q = bench_queries()
    started = time.perf_counter()
    now = datetime.now(UTC)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for first in range(1, jobs + 1, 100_000):
            params = {"first": first, "last": min(jobs, first + 99_999), "now": now, "live": live}
            conn.execute(q["bench_seed_jobs"].text, params)  # type: ignore[arg-type]
            conn.execute(q["bench_settle_seeded"].text)  # type: ignore[arg-type]
            if (first + 99_999) % SEED_BUCKET == 0:
                conn.execute(q["bench_seal"].text)  # type: ignore[arg-type]
        bounds = _bounds()
        for lo, hi in zip(bounds, bounds[1:]):
            conn.execute(q["bench_seed_attempts"].text, {"lo": lo, "hi": hi})  # type: ignore[arg-type]
            conn.execute(q["bench_seed_steps"].text, {"lo": lo, "hi": hi})  # type: ignore[arg-type]
        conn.execute(q["bench_seed_workers"].text, {"now": now})  # type: ignore[arg-type]
        if not upgraded:
            conn.execute(q["bench_compact_live"].text)  # type: ignore[arg-type]
        conn.execute(q["bench_vacuum"].text)  # type: ignore[arg-type]
    return time.perf_counter() - started


def seed_outbox(dsn: str, unpublished: int = OUTBOX_UNPUBLISHED, published: int = OUTBOX_PUBLISHED) -> float:
    q = bench_queries()
    started = time.perf_counter()
    now = datetime.now(UTC)
    with psycopg.connect(dsn, autocommit=True) as conn:
        # The audit trail first: published rows are the older ones, at the table's head.
        for name, total in (("bench_seed_outbox_published", published), ("bench_seed_outbox_unpublished", unpublished)):
            for first in range(1, total + 1, 100_000):
                conn.execute(q[name].text, {"first": first, "last": min(total, first + 99_999), "now": now})  # type: ignore[arg-type]
        conn.execute(q["bench_seed_outbox_relays"].text, {"now": now})  # type: ignore[arg-type]
        for _ in range(2):  # as _seed_busy_hour: the second pass sets the pages all-visible
            conn.execute(q["bench_vacuum_outbox"].text)  # type: ignore[arg-type]
    return time.perf_counter() - started


async def _measure_outbox(dsn: str, runs: int) -> dict[str, list[float]]:
    """The outbox screen's figures, through the path `jobsctl outbox` and the console take."""
    from engine.drivers.postgres import PostgresDriver
    from engine.introspect.base import EngineView
    from engine.introspect.outbox import outbox_rows, outbox_view, outbox_why

    driver = PostgresDriver(dsn)
    view = EngineView(driver)
    first = await outbox_view(view)
    assert first.backlog_capped and first.holders and first.failing, "the outbox seed did not take"
    held_id = await _scalar_id(dsn, "bench_outbox_held_id")
    waiting_id = await _scalar_id(dsn, "bench_outbox_waiting_id")
    failing_id = first.failing[0].id
    cases: dict[str, Any] = {
        "outbox.view": lambda: outbox_view(view),
        # The Outbox screen's rows (the backlog's head and the failing rows, a why each), read after
        # the view on each refresh; outbox.screen is the two together, what one refresh costs.
        "outbox.rows": lambda: outbox_rows(view, first),
        "outbox.screen": lambda: _screen(view),
        "outbox.why.waiting": lambda: outbox_why(view, waiting_id),
        "outbox.why.held": lambda: outbox_why(view, held_id),
        "outbox.why.failing": lambda: outbox_why(view, failing_id),
    }
    out = {name: await _time(call, runs) for name, call in cases.items()}
    await driver.close()
    return out


async def _screen(view: Any) -> Any:
    from engine.introspect.outbox import outbox_rows, outbox_view

    return await outbox_rows(view, await outbox_view(view))


async def _scalar_id(dsn: str, name: str) -> str:
    async with await psycopg.AsyncConnection.connect(dsn) as conn:
        row = await (await conn.execute(bench_queries()[name].text)).fetchone()  # type: ignore[arg-type]
        assert row is not None, name
        return str(row[0])


def _bounds() -> list[str]:
    # Batches by id range: 16 slices of the UUID space by its first hex digit (UUIDv7 sorts by time).
    return [f"{d:x}0000000-0000-0000-0000-000000000000" for d in range(16)] + ["ffffffff-ffff-ffff-ffff-ffffffffffff"]


async def _measure(
    dsn: str, runs: int, busy: int = BUSY_HOUR, *, upgraded: bool = False
) -> tuple[dict[str, list[float]], dict[str, Any]]:
    from engine.actions import Operator
    from engine.drivers.postgres import PostgresDriver
    from engine.introspect import Introspector, parse_filter
    from engine.services.maintenance import MaintenanceConfig

    driver = PostgresDriver(dsn)
    intro = Introspector(driver, budget=2.0)
    ops = Operator(driver, actor="bench")
    first = await intro.jobs(parse_filter("state=dead"), limit=50)
    dead_id = first.items[0].id
    parked = (await intro.jobs(parse_filter("state=parked"), limit=1)).items[0].id
    cursor = (await intro.jobs(limit=50)).next_cursor
    cases: dict[str, Any] = {
        "queues": lambda: intro.queues(),
        "queue_series": lambda: intro.queue_series("q1"),
        "page.all": lambda: intro.jobs(limit=50),
        "page.next": lambda: intro.jobs(limit=50, cursor=cursor),
        "page.state=dead": lambda: intro.jobs(parse_filter("state=dead"), limit=50),
        "page.queue+state": lambda: intro.jobs(parse_filter("queue=q1 state=ready"), limit=50),
        "page.name": lambda: intro.jobs(parse_filter("name=job_7"), limit=50),
        "page.tenant": lambda: intro.jobs(parse_filter("tenant=t3"), limit=50),
        "page.code": lambda: intro.jobs(parse_filter("state=dead code=X_BENCH_3"), limit=50),
        "page.input": lambda: intro.jobs(parse_filter("input.invoice_id=4242"), limit=50),
        "page.search": lambda: intro.jobs(parse_filter("search=k:12345"), limit=50),
        "page.id": lambda: intro.jobs(parse_filter(f"search={dead_id}"), limit=50),
        "dead_letters": lambda: intro.dead_letters(),
        "workers": lambda: intro.workers(),
        "job_detail": lambda: intro.job(dead_id),
        "why.job": lambda: intro.why_job(parked),
        "why.queue": lambda: intro.why_queue("q1"),
        "plan.retry": lambda: ops.plan("retry", parse_filter("code=X_BENCH_3")),
    }
    out = {name: await _time(call, runs) for name, call in cases.items()}
    # A busy hour: `busy` more completions in the last hour, rolled up by a maintenance pass as a
    # fleet's leader does every few seconds; the sparkline then counts only the unrolled minutes.
    _seed_busy_hour(dsn, busy, upgraded=upgraded)
    now = datetime.now(UTC)
    term = await driver.leader_acquire(name="maintenance", holder="bench", now=now, lease_seconds=60)
    assert term is not None, "another maintenance leader holds this database"
    await driver.throughput_rollup(
        leader="maintenance", holder="bench", term=term, now=now, settle=MaintenanceConfig().throughput_settle
    )
    await driver.leader_release(name="maintenance", holder="bench", term=term, now=now)
    out["queues.busy_hour"] = await _time(cases["queues"], runs)
    out["queue_series.busy_hour"] = await _time(cases["queue_series"], runs)
    await driver.close()
    return out, {"dead_id": dead_id}


async def _time(call: Any, runs: int) -> list[float]:
    await call()  # warm: the pool, the plan, the cache
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - t0) * 1000)
    return samples


def _seed_busy_hour(dsn: str, n: int, *, upgraded: bool = False) -> None:
    q = bench_queries()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(q["bench_seed_busy_hour"].text, {"n": n, "now": datetime.now(UTC)})  # type: ignore[arg-type]
        conn.execute(q["bench_settle_seeded"].text)  # type: ignore[arg-type]
        if not upgraded:
            conn.execute(q["bench_compact_live"].text)  # type: ignore[arg-type]
        # A vacuum right after a bulk insert left its pages not all-visible (35,153 of 44,148
        # pages, so the planner sent index-only counts to the heap); autovacuum's next pass sets
        # them, and the second pass here stands for it.
        for _ in range(2):
            conn.execute(q["bench_vacuum"].text)  # type: ignore[arg-type]


def explain_all(dsn: str, dead_id: str) -> dict[str, list[str]]:
    """EXPLAIN every projection statement with bench-like parameters: the scans each plan uses."""
    from engine.drivers.postgres.introspect import filter_params
    from engine.drivers.sqlfiles import load_queries
    from engine.introspect import parse_filter

    q = load_queries()
    now = datetime.now(UTC)
    queues = ["q0", "q1", "q2", "q3", "q4"]
    base = {"now": now, "queues": queues, "cap": 10000, "cursor": None, "limit": 51, "id": dead_id, "keys": ["x"]}
    cases = [
        ("queue_names", {}),
        ("queue_running", {}),
        ("queue_counts", {}),
        ("queue_oldest_ready", {}),
        ("queue_throughput", {}),
        ("queue_series", {"queue": "q1"}),
        ("dead_groups", filter_params(parse_filter(""))),
        ("dead_groups_counted", filter_params(parse_filter(""))),
        ("job_duplicate", {}),
        ("job_bulk_groups", filter_params(parse_filter("code=X_BENCH_3")) | {"action": "retry"}),
    ]
    for text in (
        "",
        "state=dead",
        "queue=q1 state=ready",
        "name=job_7",
        "tenant=t3",
        "state=dead code=X_BENCH_3",
        "input.invoice_id=4242",
        "search=k:12345",
        f"search={dead_id}",
    ):
        cases += [
            ("job_page", filter_params(parse_filter(text)) | {"_label": text}),
            ("job_page_count", filter_params(parse_filter(text)) | {"_label": text}),
        ]
    cases += [
        ("outbox_backlog", {}),
        ("outbox_holders", {"limit": 20}),
        ("outbox_failing", {"limit": 20}),
        ("outbox_relays", {"since": now}),
        ("outbox_head", {"limit": 20}),
    ]
    found: dict[str, list[str]] = {}
    with psycopg.connect(dsn) as conn:
        conn.execute("set plan_cache_mode = force_custom_plan")
        for name, extra in cases:
            label = f"{name}[{extra.pop('_label', '')}]" if "_label" in extra else name
            params = base | extra
            plan = conn.execute(f"explain (format json) {q[name].text}", params).fetchone()[0]  # type: ignore[index, arg-type]
            found[label] = sorted(set(_scans(plan[0]["Plan"])))
    return found


def _scans(node: dict[str, Any]) -> list[str]:
    out = []
    if "Scan" in node.get("Node Type", "") and node.get("Relation Name"):
        out.append(
            f"{node['Node Type']} {node['Relation Name']}"
            + (f" ({node['Index Name']})" if node.get("Index Name") else "")
        )
    for child in node.get("Plans", []):
        out += _scans(child)
    return out


def run(dsn: str, jobs: int = 1_000_000, runs: int = 30, quick: bool = False) -> dict[str, list[float]]:
    """Seed ``dsn`` (an installed, empty database) and answer {projection: [ms, ...]}."""
    if quick:
        jobs, runs = min(jobs, 100_000), min(runs, 10)
    seed(dsn, jobs)
    samples, _ = asyncio.run(_measure(dsn, runs, BUSY_HOUR // 10 if quick else BUSY_HOUR))
    seed_outbox(dsn, OUTBOX_UNPUBLISHED // 10 if quick else OUTBOX_UNPUBLISHED)
    samples.update(asyncio.run(_measure_outbox(dsn, runs)))
    samples.update(asyncio.run(_measure_flood(dsn, runs)))
    return samples


async def _measure_flood(dsn: str, runs: int) -> dict[str, list[float]]:
    """The dead-letter view after a flood: every completed row dead (bench_flood_dead), whole and
    for one tenant, as the console's Dead letters screen reads it on each refresh."""
    from engine.drivers.postgres import PostgresDriver
    from engine.introspect import Introspector, parse_filter

    q = bench_queries()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(q["bench_flood_dead"].text)  # type: ignore[arg-type]  # several statements: no parameters
        conn.execute(q["bench_vacuum"].text)  # type: ignore[arg-type]
    driver = PostgresDriver(dsn)
    intro = Introspector(driver, budget=2.0)
    out = {
        "dead_letters.flood": await _time(lambda: intro.dead_letters(), runs),
        "dead_letters.flood.tenant": await _time(lambda: intro.dead_letters(parse_filter("tenant=t3")), runs),
    }
    await driver.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.projections")
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--outbox", type=int, default=OUTBOX_UNPUBLISHED, help="unpublished outbox rows to seed")
    ap.add_argument(
        "--live-percent",
        type=int,
        default=LIVE_PERCENT,
        help="percent of the jobs live (2..90; past 2 the rest of them ready: the console during a backlog)",
    )
    ap.add_argument("--dsn", help="an installed, EMPTY database (default: a throwaway embedded server)")
    ap.add_argument(
        "--upgraded",
        action="store_true",
        help="jobs.job as an upgrade from the one-table schema leaves it (heap and indexes sized for every row)",
    )
    args = ap.parse_args(argv)
    if refusal := live_refusal(args.live_percent):
        ap.error(refusal)
    from engine.schema import install_schema
    from engine.testing import EmbeddedPostgres, create_database

    pg = None
    dsn = args.dsn
    if dsn is None:
        pg = EmbeddedPostgres(settings={"shared_buffers": "256MB"})
        dsn = create_database(pg.start(), "projections")
        install_schema(dsn)
    try:
        seconds = seed(dsn, args.jobs, upgraded=args.upgraded, live=args.live_percent)
        samples, meta = asyncio.run(_measure(dsn, args.runs, upgraded=args.upgraded))
        outbox_seconds = seed_outbox(dsn, args.outbox)
        samples.update(asyncio.run(_measure_outbox(dsn, args.runs)))
        plans = explain_all(dsn, meta["dead_id"])
        samples.update(asyncio.run(_measure_flood(dsn, args.runs)))
        with psycopg.connect(dsn, autocommit=True) as conn:
            parent_empty = conn.execute("select not exists (select 1 from only jobs.job_done)").fetchone() == (True,)
    finally:
        if pg is not None:
            pg.close()
    rows = []
    print(
        f"seeded {args.jobs} jobs ({args.live_percent}% live) in {seconds:.1f} s, {args.outbox} unpublished outbox rows in {outbox_seconds:.1f} s"
    )
    print(f"{args.runs} runs each (ms)")
    print(f"{'projection':<25} {'median':>8} {'p95':>8} {'max':>8} {'target':>7}  ok")
    for name, xs in samples.items():
        xs = sorted(xs)
        med, p95 = statistics.median(xs), xs[min(len(xs) - 1, int(len(xs) * 0.95))]
        target = (
            PAGE_TARGET_MS if name.startswith("page.") else VIEW_TARGET_MS if not name.startswith("plan.") else None
        )
        ok = "-" if target is None else ("yes" if med < target else "NO")
        print(f"{name:<25} {med:8.2f} {p95:8.2f} {xs[-1]:8.2f} {target or '':>7}  {ok}")
        rows.append(
            {
                "projection": name,
                "median_ms": round(med, 3),
                "p95_ms": round(p95, 3),
                "max_ms": round(xs[-1], 3),
                "target_ms": target,
            }
        )
    # Since 0012 jobs.job_done itself holds no row unless upgraded (settled rows go to its buckets):
    # a scan of an empty table reads no page, and the planner rightly prefers it to an index.
    allowed = {"Seq Scan job_done"} if parent_empty else set()
    seq = {
        k: v
        for k, v in plans.items()
        if any((s.startswith("Seq Scan job") or s == "Seq Scan outbox") and s not in allowed for s in v)
    }
    print("EXPLAIN: " + ("no sequential scan of jobs.job or jobs.outbox" if not seq else f"SEQ SCAN in {sorted(seq)}"))
    print(
        json.dumps(
            {
                "jobs": args.jobs,
                "outbox_unpublished": args.outbox,
                "runs": args.runs,
                "seed_seconds": round(seconds, 1),
                "results": rows,
                "plans": plans,
            },
            indent=1,
        )
    )
    return 1 if seq or any(r["target_ms"] and r["median_ms"] >= r["target_ms"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
