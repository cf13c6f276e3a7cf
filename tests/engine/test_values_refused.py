"""Values an option cannot take are refused where they are given, with the engine's error, never
accepted to fail later or to mean something else: connect's driver options (a pool of no
connections, a statement timeout of 0.5 ms that would reach the server as 0, no timeout at all, a
flag that is not a bool), an infinite read budget, a CLI statement timeout under a millisecond, an
outbox listing of no rows."""

from __future__ import annotations

import math

import pytest
from typer.testing import CliRunner

from engine import connect
from engine.actions import Operator
from engine.cli import app
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.introspect import Introspector

PG = "postgresql://nobody@127.0.0.1:1/nowhere"


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"pool_size": 0}, "pool_size=0"),
        ({"pool_size": "ten"}, "pool_size='ten'"),
        ({"pool_size": True}, "pool_size=True"),
        ({"statement_timeout_ms": 0.5}, "statement_timeout_ms=0.5"),
        ({"statement_timeout_ms": 0}, "statement_timeout_ms=0"),
        ({"statement_timeout_ms": math.nan}, "statement_timeout_ms=nan"),
        ({"prepared_statements": "no"}, "prepared_statements='no'"),
        ({"optimistic_batches": "no"}, "optimistic_batches='no'"),
    ],
)
def test_a_driver_option_that_cannot_be_meant_is_refused_at_connect(options: dict[str, object], named: str) -> None:
    with pytest.raises(JobsError) as caught:
        connect(PG, **options)
    assert caught.value.code == X_INVALID_ARGUMENT and named in caught.value.cause
    assert caught.value.fix.startswith("connect(dsn, ")


def test_an_infinite_read_budget_is_refused_where_it_is_given() -> None:
    eng = connect("memory://")
    for make in (lambda: Introspector(eng, budget=math.inf), lambda: Operator(eng, actor="a", budget=math.inf)):
        with pytest.raises(JobsError) as caught:
            make()
        assert caught.value.code == X_INVALID_ARGUMENT and "budget=inf" in caught.value.cause
    r = CliRunner().invoke(app, ["queues", "--dsn", "memory://", "--budget", "inf"])
    assert r.exit_code == 1 and "X_INVALID_ARGUMENT" in r.stderr and "Traceback" not in r.output


@pytest.mark.parametrize("seconds", ["0.0004", "inf", "nan", "-1"])
def test_a_cli_statement_timeout_that_would_reach_the_server_as_none_or_nothing_is_refused(seconds: str) -> None:
    r = CliRunner().invoke(app, ["--statement-timeout", seconds, "queues", "--dsn", PG])
    assert r.exit_code == 1 and "error X_INVALID_ARGUMENT: --statement-timeout" in r.stderr, r.stderr


@pytest.mark.parametrize("limit", ["0", "-1"])
def test_an_outbox_listing_of_no_rows_is_refused(limit: str) -> None:
    r = CliRunner().invoke(app, ["outbox", "--dsn", "memory://", "--limit", limit])
    assert r.exit_code == 1 and f"limit={limit} must be a whole number from 1 to 500" in r.stderr, r.stderr
