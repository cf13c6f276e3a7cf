"""Every projection query runs under the caller's time budget (a statement timeout)."""

from __future__ import annotations

import psycopg
import pytest

from engine.actions import Operator
from engine.clock import FakeClock
from engine.drivers.postgres import PostgresDriver
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
            assert e.value.fix.startswith("jobsctl ")
        blocker.rollback()
    assert (await intro.queues()).queues == ()  # the connection is healthy again
    await driver.close()
