"""The SQL catalog: a text several statements share is one named fragment that the loader
includes, an include of no fragment fails loudly at load, and a statement runs only as the
cardinality its header declares."""

from __future__ import annotations

import pytest

from engine.drivers.postgres import PostgresDriver
from engine.drivers.sqlfiles import Q, load_queries, parse_queries, sql_dir
from engine.errors import X_SQL_CATALOG, JobsError

FILTERED = ("job_page", "job_page_count", "dead_groups", "job_bulk_groups", "job_bulk_free_keys")
FILTERED += ("job_bulk_retry", "job_bulk_cancel")


def test_an_include_of_no_fragment_fails_loudly_at_load() -> None:
    text = "-- name: x :many\nselect 1 from t\nwhere true\n  -- include: job_fliter\n;\n"
    with pytest.raises(JobsError) as err:
        parse_queries(text, "x.sql")
    assert err.value.code == X_SQL_CATALOG and "job_fliter" in err.value.cause and "x.sql" in err.value.cause


def test_an_include_is_the_fragment_indented_as_its_line() -> None:
    text = (
        "-- fragment: f\n-- Two conditions.\nand a = 1\n  and b = 2\n\n"
        "-- name: x :many\n-- Reads t.\nselect 1 from t\nwhere true\n    -- include: f\norder by 1;\n"
    )
    q = parse_queries(text, "x.sql")
    assert set(q) == {"x"}  # a fragment is no statement
    assert q["x"].text == "select 1 from t\nwhere true\n    and a = 1\n      and b = 2\norder by 1"
    assert q["x"].purpose == "Reads t."


def test_a_fragment_declared_twice_or_empty_is_refused() -> None:
    with pytest.raises(JobsError) as err:
        parse_queries("-- fragment: f\nand a\n-- fragment: f\nand b\n", "x.sql")
    assert err.value.code == X_SQL_CATALOG and "twice" in err.value.cause
    with pytest.raises(JobsError) as err:
        parse_queries("-- fragment: f\n-- nothing but a comment\n", "x.sql")
    assert err.value.code == X_SQL_CATALOG and "no body" in err.value.cause


def test_every_filtered_statement_reads_the_one_job_filter() -> None:
    catalog = load_queries()
    condition = "(%(key_like)s::text is null or idempotency_key like %(key_like)s::text)"
    for name in FILTERED:
        assert condition in catalog[name].text, name
        assert "-- include:" not in catalog[name].text, name
    for name in ("introspect.sql", "actions.sql"):
        text = (sql_dir() / "queries" / name).read_text()
        assert text.count(condition) == (1 if name == "introspect.sql" else 0)  # the fragment's own


async def test_a_statement_runs_only_as_the_cardinality_its_header_declares(pg_dsn: str) -> None:
    driver = PostgresDriver(pg_dsn)
    try:
        assert Q.job_history.cardinality == "many"
        with pytest.raises(JobsError) as err:
            await driver._row(Q.job_history, {"id": "00000000-0000-0000-0000-000000000000"})
        assert err.value.code == X_SQL_CATALOG and "declared :many" in err.value.cause
        assert await driver._rows(Q.job_history, {"id": "00000000-0000-0000-0000-000000000000"}) == []
    finally:
        await driver.close()


def test_a_header_ending_in_generic_marks_its_statement_and_any_other_word_is_refused() -> None:
    got = parse_queries("-- name: a :one generic\nselect 1;\n-- name: b :many\nselect 2;\n", "t.sql")
    assert (got["a"].generic, got["b"].generic) == (True, False)
    assert Q.worker_claim.generic  # the claim: one plan whatever its parameters, costly to make
    with pytest.raises(JobsError) as err:
        parse_queries("-- name: a :one custom\nselect 1;\n", "t.sql")
    assert err.value.code == X_SQL_CATALOG and "malformed header" in err.value.cause
    assert "[generic]" in err.value.fix
