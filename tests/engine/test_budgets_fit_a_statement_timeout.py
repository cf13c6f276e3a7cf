"""A number of seconds that becomes a statement timeout (an Operator's or an Introspector's budget,
connect's statement_timeout_ms, jobsctl's --budget) is refused at construction past what
PostgreSQL's statement_timeout holds (2,147,483,647 ms, about 24 days), with code, cause and fix,
rather than failing at the first read; stale_after, a duration that is no timeout, follows the
one duration rule (engine/options.py)."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from engine.actions import Operator
from engine.api import Engine, connect
from engine.cli import app
from engine.drivers.memory import MemoryDriver
from engine.drivers.postgres import PostgresDriver
from engine.errors import X_INVALID_ARGUMENT, X_QUERY_BUDGET, JobsError
from engine.introspect import Introspector
from engine.options import LONGEST_SECONDS, LONGEST_TIMEOUT_MS

PAST = LONGEST_TIMEOUT_MS / 1000 + 1  # a second past the longest statement timeout
AT = LONGEST_TIMEOUT_MS / 1000


@pytest.mark.parametrize(
    ("make", "fix"),
    [
        (lambda eng: Operator(eng, actor="alice", budget=PAST), "Operator(engine, actor=..., budget=5.0)"),
        (lambda eng: Introspector(eng, budget=PAST), "Introspector(engine, budget=0.5)"),
    ],
)
def test_a_budget_past_the_longest_statement_timeout_is_refused_at_construction(make: Any, fix: str) -> None:
    with pytest.raises(JobsError) as err:
        make(Engine(MemoryDriver()))
    assert err.value.code == X_INVALID_ARGUMENT and err.value.fix == fix
    assert f"budget={PAST!r} must be" in err.value.cause and "at most 2147483 (about 24 days" in err.value.cause


def test_a_budget_at_the_longest_statement_timeout_is_taken() -> None:
    eng = Engine(MemoryDriver())
    assert Operator(eng, actor="alice", budget=AT).budget_ms == LONGEST_TIMEOUT_MS
    assert Introspector(eng, budget=AT).budget_ms == LONGEST_TIMEOUT_MS


@pytest.mark.parametrize("stale_after", [LONGEST_SECONDS + 1, 1e300])
def test_a_stale_after_past_the_longest_duration_is_refused_by_the_duration_rule(stale_after: float) -> None:
    with pytest.raises(JobsError) as err:
        Introspector(Engine(MemoryDriver()), stale_after=stale_after)
    assert err.value.code == X_INVALID_ARGUMENT and err.value.fix == "Introspector(engine, stale_after=30)"
    assert f"at most {LONGEST_SECONDS} (100 years)" in err.value.cause
    assert Introspector(Engine(MemoryDriver()), stale_after=30 * 86400).stale_after == 30 * 86400  # no timeout


def test_a_connect_statement_timeout_past_what_postgres_holds_is_refused_before_connecting() -> None:
    with pytest.raises(JobsError) as err:
        connect("host=/nonexistent-socket-dir dbname=nothing", statement_timeout_ms=LONGEST_TIMEOUT_MS + 1)
    assert err.value.code == X_INVALID_ARGUMENT and err.value.fix == "connect(dsn, statement_timeout_ms=None)"
    assert str(LONGEST_TIMEOUT_MS) in err.value.cause


def test_a_jobsctl_budget_past_the_longest_statement_timeout_is_refused_with_the_commands_option() -> None:
    r = CliRunner().invoke(app, ["queues", "--budget", str(PAST), "--dsn", "memory://"])
    assert r.exit_code == 1 and "error X_INVALID_ARGUMENT: --budget" in r.stderr
    assert "  fix: jobsctl queues --budget 2\n" in r.stderr


async def test_a_budget_at_the_longest_statement_timeout_reads_on_postgres(pg_dsn: str) -> None:
    eng = Engine(PostgresDriver(pg_dsn))
    try:
        assert (await Introspector(eng, budget=AT).queues()).queues == ()  # the server takes the setting
    finally:
        await eng.aclose()


async def test_a_read_cut_off_by_its_budget_names_a_budget_in_seconds(pg_dsn: str) -> None:
    d = PostgresDriver(pg_dsn)
    try:
        with pytest.raises(JobsError) as err:
            await d._budgeted(5, "queues", lambda conn: conn.execute("select pg_sleep(2)"))
        assert err.value.code == X_QUERY_BUDGET and err.value.fix == "jobsctl queues --budget 1"  # --budget is seconds
    finally:
        await d.close()
