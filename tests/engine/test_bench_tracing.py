"""bench.tracing measures what it says: its "on" side enqueues through a tracing engine (every job
stores a trace context) and its "off" side through one that stores none."""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from bench.ab import HERE, _measure


def test_bench_tracing_on_stores_a_context_with_every_job_and_off_stores_none(empty_db: Callable[[], str]) -> None:
    for flag, want in (("1", 203), ("0", 0)):
        dsn = empty_db()
        rate, cpu_us = _measure(HERE, dsn, "batch100", 200, {"BENCH_TRACING": flag})
        assert rate > 0 and cpu_us > 0
        with psycopg.connect(dsn) as conn:
            row = conn.execute("select count(*) filter (where trace is not null), count(*) from jobs.job").fetchone()
        assert row is not None and row[0] == want and row[1] == 203  # with the child's three warm-up jobs
