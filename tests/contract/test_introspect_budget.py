"""Every projection query runs under the caller's time budget (a statement timeout), and the
job filter is spelled the same in every statement that reads it."""

from __future__ import annotations

import re

import psycopg
import pytest

from engine.actions import Operator
from engine.clock import FakeClock
from engine.drivers.postgres import PostgresDriver
from engine.drivers.sqlfiles import sql_dir
from engine.errors import JobsError
from engine.introspect import Introspector


async def test_an_over_budget_projection_is_cut_off_with_a_clear_error(pg_dsn: str, clock: FakeClock) -> None:
    driver = PostgresDriver(pg_dsn)
    intro = Introspector(driver, clock=clock, budget=0.2)
    await intro.queues()  # under budget: answers
    # Another session holds the jobs table: a projection would wait for ever; the budget cuts it.
    with psycopg.connect(pg_dsn) as blocker:
        blocker.execute("lock table jobs.job in access exclusive mode")
        for call in (
            intro.queues,
            intro.jobs,
            intro.dead_letters,
            lambda: Operator(driver, clock=clock, actor="a", budget=0.2).plan("retry"),
        ):
            with pytest.raises(JobsError) as e:
                await call()
            assert e.value.code == "X_QUERY_BUDGET" and "budget" in e.value.cause
            assert e.value.fix.startswith("jobs ")
        blocker.rollback()
    assert (await intro.queues()).queues == ()  # the connection is healthy again
    await driver.close()


def test_the_job_filter_is_spelled_identically_in_every_statement() -> None:
    blocks = []
    for name in ("introspect.sql", "actions.sql"):
        text = (sql_dir() / "queries" / name).read_text()
        blocks += [
            re.sub(r"\s+", " ", b).strip()
            for b in re.findall(r"^\s*-- filter:begin\n(.*?)^\s*-- filter:end$", text, re.S | re.M)
        ]
    assert len(blocks) == 11  # job_page and job_page_count spell it once per arm (finished, live)
    assert len(set(blocks)) == 1, "a copy of the job filter drifted from the others"
