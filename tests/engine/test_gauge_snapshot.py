"""The queue gauges' fleet count on Postgres (I24): every worker asks each gauges_interval, and the
count reads every waiting and dead row, so the fleet counts once per max_age. A fresh snapshot
never starts a scan of jobs.job, and a caller that finds the count under way reads the last one
rather than wait for it or count a second time."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import psycopg

from engine.clock import FakeClock
from engine.drivers.postgres import PostgresDriver
from engine.drivers.sqlfiles import Q
from engine.ids import IdFactory
from engine.testing import make_job
from engine.types import QueueGauges


def _job_scans(plan: dict[str, Any]) -> list[tuple[str, int]]:
    """(index or relation, loops) of every scan of jobs.job in an EXPLAIN ANALYZE plan."""
    out = []
    if plan.get("Relation Name") == "job" and "Scan" in plan.get("Node Type", ""):
        out.append((plan.get("Index Name", "job"), int(plan["Actual Loops"])))
    for child in plan.get("Plans", []):
        out += _job_scans(child)
    return out


def _explain(dsn: str, max_age: float, now: datetime) -> list[tuple[str, int]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("begin")
        try:
            doc = conn.execute(
                "explain (analyze, format json) " + Q.queue_gauges.text,  # type: ignore[operator]
                {"now": now, "max_age": max_age},
            ).fetchone()[0]  # type: ignore[index]
        finally:
            conn.execute("rollback")
    return _job_scans(doc[0]["Plan"])


async def test_i24_a_fresh_gauge_snapshot_never_scans_the_jobs_table(
    pg_dsn: str, ids: IdFactory, clock: FakeClock
) -> None:
    driver = PostgresDriver(pg_dsn)
    now = clock.now()
    try:
        await make_job(driver, ids, now, queue="mail")
        assert await driver.queue_gauges(now=now) == [QueueGauges("mail", 1, 0.0, 0)]
    finally:
        await driver.close()
    stale = _explain(pg_dsn, 0.0, now + timedelta(seconds=1))
    assert stale and all(loops == 1 for _, loops in stale), stale  # a stale snapshot is counted
    fresh = _explain(pg_dsn, 60.0, now + timedelta(seconds=1))
    assert {name for name, _ in fresh} == {name for name, _ in stale}
    assert all(loops == 0 for _, loops in fresh), fresh  # a fresh one: never executed


async def test_i24_a_caller_that_finds_the_count_under_way_reads_the_last_snapshot_without_waiting(
    pg_dsn: str, ids: IdFactory, clock: FakeClock
) -> None:
    driver = PostgresDriver(pg_dsn)
    now = clock.now()
    try:
        await make_job(driver, ids, now, queue="mail")
        assert await driver.queue_gauges(now=now) == [QueueGauges("mail", 1, 0.0, 0)]
        await make_job(driver, ids, now, queue="mail")
        later = now + timedelta(seconds=3)
        with psycopg.connect(pg_dsn) as counting:  # another worker, counting now: it holds the row
            counting.execute("select 1 from jobs.gauge_snapshot where id = 1 for update")
            got = await asyncio.wait_for(driver.queue_gauges(now=later), 5)
            assert got == [QueueGauges("mail", 1, 3.0, 0)]  # the last count, its age advanced
        assert await driver.queue_gauges(now=later) == [QueueGauges("mail", 2, 3.0, 0)]
    finally:
        await driver.close()
