"""A queue count past its cap, on Postgres: the planner's estimate from the (queue, state)
statistics when it says more than the cap ("~12,000" rather than "≥1000"), else "at least the
cap". Exact counts below the cap are untouched."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg

from engine.drivers.postgres import PostgresDriver
from engine.introspect import Introspector
from engine.projections import Count


def _backlog(dsn: str, queue: str, n: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            """insert into jobs.job
                 (id, name, queue, idempotency_key, input, state, max_attempts, run_at, created_at, updated_at)
               select gen_random_uuid(), 'send_email', %(queue)s, %(queue)s || ':' || i, '{}', 'ready', 3,
                      %(now)s, %(now)s, %(now)s
               from generate_series(1, %(n)s) as i""",
            {"queue": queue, "n": n, "now": datetime.now(UTC)},
        )


async def test_a_capped_backlog_answers_the_planners_estimate_once_statistics_know_it(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:  # analyzed when this test says, not before
        conn.execute("alter table jobs.job set (autovacuum_enabled = false)")
    _backlog(pg_dsn, "billing", 12_000)
    _backlog(pg_dsn, "mail", 300)
    driver = PostgresDriver(pg_dsn)
    try:
        intro = Introspector(driver, count_cap=1000)
        before = {q.name: q.ready for q in (await intro.queues()).queues}
        # Never analyzed: the planner guesses a handful of rows, less than counted, so "at least".
        assert before == {"billing": Count(1000, "at-least"), "mail": Count(300)}
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("analyze jobs.job")
        view = await intro.queues()
        after = {q.name: q.ready for q in view.queues}
        assert after["mail"] == Count(300)
        assert after["billing"].kind == "estimate" and 10_800 <= after["billing"].value <= 13_200
        assert view.estimated and str(after["billing"]).startswith("~")
    finally:
        await driver.close()
