"""The catalog of named statements (sql/queries), and what the schema's indexes let them do."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
import pytest

from engine.drivers.postgres.introspect import filter_params
from engine.drivers.sqlfiles import Q, load_queries, parse_queries
from engine.errors import JobsError
from engine.projections import JobFilter


def test_every_named_statement_is_used_by_the_postgres_driver() -> None:
    root = Path(__file__).resolve().parents[2] / "engine"
    code = "\n".join(p.read_text() for p in root.rglob("*.py"))
    unused = [name for name in load_queries() if not re.search(rf"\bQ\.{name}\b", code)]
    assert unused == []


def test_the_catalog_refuses_duplicates_and_empty_bodies() -> None:
    with pytest.raises(JobsError) as dup:
        parse_queries("-- name: a :one\nselect 1;\n-- name: a :one\nselect 2;\n", "x.sql")
    assert dup.value.code == "X_SQL_CATALOG"
    with pytest.raises(JobsError) as empty:
        parse_queries("-- name: a :one\n-- purpose only\n", "x.sql")
    assert "no body" in empty.value.cause
    q = parse_queries("-- name: job_x :many\n-- Reads x.\nselect 1;\n", "x.sql")["job_x"]
    assert (q.cardinality, q.purpose, q.text) == ("many", "Reads x.", "select 1")


def test_a_statements_positional_form_numbers_each_named_parameter_once_in_order() -> None:
    q = parse_queries("-- name: x :one\nselect %(b)s::int + %(a)s, %(b)s, '%%(not)s'::text;\n", "x.sql")["x"]
    assert q.positional == ("select $1::int + $2, $1, '%(not)s'::text", ("b", "a"))
    with pytest.raises(JobsError) as err:
        _ = parse_queries("-- name: y :one\nselect %(ids)b;\n", "y.sql")["y"].positional
    assert err.value.code == "X_SQL_CATALOG" and "%(ids)b" in err.value.cause
    text, names = Q.job_enqueue_one.positional
    assert "%(" not in text and f"${len(names)}" in text and f"${len(names) + 1}" not in text
    assert set(names) == {
        "id",
        "name",
        "queue",
        "tenant",
        "key",
        "input",
        "run_at",
        "now",
        "priority",
        "max_attempts",
        "created_at",
    }


def test_no_named_statement_holds_a_bare_percent_sign() -> None:
    # psycopg reads every % as a placeholder, even in a comment: "~15%" failed the worker's claim.
    import re

    bad = [name for name, q in load_queries().items() if re.search(r"%(?![(%])", q.text.replace("%%", ""))]
    assert bad == []


def test_dead_letters_are_grouped_from_an_index_only_scan(pg_dsn: str) -> None:
    # Postgres scans index-only only when every column the query names is in the index: an
    # expression index (coalesce(error_code, '')) sent every dead row to the heap.
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("set enable_seqscan = off")
        conn.execute("set enable_bitmapscan = off")
        plan = "\n".join(
            r[0] for r in conn.execute("explain " + Q.dead_groups.text, filter_params(JobFilter())).fetchall()
        )
    assert "Index Only Scan using job_dead_v5" in plan
