"""The queues view during a backlog: each of its statements reads a bounded number of rows per
queue, however many wait. The oldest waiting row's age was a min() over every waiting row of each
queue (75 ms a refresh over 500,000 ready rows in five queues; python -m bench.projections
--live-percent 50); it is now a probe per priority of job_claim."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from bench.sqlq import fragment
from engine.drivers.sqlfiles import Q

READY = 3_000
UUID7_AT = fragment("bench", "uuid7_at")  # a UUIDv7 at the row's time `at`, on any server version
T0 = datetime(2026, 12, 4, 12, tzinfo=UTC)


def _rows_read(plan: dict[str, Any]) -> int:
    """Rows the scans of jobs.job read (returned + removed by a filter), over every loop."""
    n = 0
    if plan.get("Relation Name") == "job" and "Scan" in plan.get("Node Type", ""):
        per_loop = plan.get("Actual Rows", 0) + plan.get("Rows Removed by Filter", 0)
        n = int(per_loop * plan.get("Actual Loops", 1))
    return n + sum(_rows_read(child) for child in plan.get("Plans", []))


@pytest.fixture
def backlog(pg_dsn: str) -> str:
    """READY ready rows in queue 'q' over three priorities, one per second from T0, and one
    parked row; analyzed."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(
            f"""insert into jobs.job (id, name, queue, idempotency_key, input, state, priority, attempt,
                                      max_attempts, run, run_at, created_at, updated_at, waiting_since)
                select {UUID7_AT}, 'j', 'q', 'k' || i, '{{}}', case when i = 7 then 'parked' else 'ready' end,
                       i %% 3, 0, 1, 0, at, at, at, case when i = 7 then at end
                from (select i, %(t0)s::timestamptz + i * interval '1 second' as at
                      from generate_series(1, %(n)s) as i) as s""",  # noqa: S608
            {"t0": T0, "n": READY},
        )
        conn.execute("vacuum analyze jobs.job")
    return pg_dsn


def test_the_oldest_waiting_row_of_a_backlog_is_found_without_reading_the_backlog(backlog: str) -> None:
    params = {"queues": ["q"], "now": T0 + timedelta(hours=2)}
    with psycopg.connect(backlog) as conn:
        conn.execute("set plan_cache_mode = force_custom_plan")  # as budget_set sets it
        (oldest,) = conn.execute(Q.queue_oldest_ready.text, params).fetchall()
        doc = conn.execute(f"explain (analyze, format json) {Q.queue_oldest_ready.text}", params).fetchone()
    assert oldest == ("q", T0 + timedelta(seconds=1))  # row 1, priority 1: every priority was probed
    assert doc is not None
    assert _rows_read(doc[0][0]["Plan"]) <= 20  # a few probes, against READY rows read one by one


def test_the_oldest_waiting_row_is_found_without_stepping_over_rows_not_yet_due(pg_dsn: str) -> None:
    # Jobs scheduled ahead share the claim index with the ready ones: READY delayed rows due
    # tomorrow at priority 5, where no row is ready, and READY ready rows at priority 0.
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(
            f"""insert into jobs.job (id, name, queue, idempotency_key, input, state, priority, attempt,
                                      max_attempts, run, run_at, created_at, updated_at)
                select {UUID7_AT}, 'j', 'q', 'k' || i, '{{}}', case when i %% 2 = 1 then 'ready' else 'delayed' end,
                       case when i %% 2 = 1 then 0 else 5 end, 0, 1, 0,
                       case when i %% 2 = 1 then at else at + interval '1 day' end, at, at
                from (select i, %(t0)s::timestamptz + i * interval '1 second' as at
                      from generate_series(1, %(n)s) as i) as s""",  # noqa: S608
            {"t0": T0, "n": 2 * READY},
        )
        conn.execute("vacuum analyze jobs.job")
    params = {"queues": ["q"], "now": T0 + timedelta(hours=2)}
    with psycopg.connect(pg_dsn) as conn:
        conn.execute("set plan_cache_mode = force_custom_plan")
        (oldest,) = conn.execute(Q.queue_oldest_ready.text, params).fetchall()
        doc = conn.execute(f"explain (analyze, format json) {Q.queue_oldest_ready.text}", params).fetchone()
    assert oldest == ("q", T0 + timedelta(seconds=1))
    assert doc is not None
    assert _rows_read(doc[0][0]["Plan"]) <= 20
