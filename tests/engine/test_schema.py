"""The schema's one install point (I3) and the catalog of named statements."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from engine.drivers.postgres.introspect import filter_params
from engine.drivers.postgres.schema import SCHEMA_VERSION
from engine.drivers.sqlfiles import Q, load_queries, parse_queries
from engine.errors import JobsError
from engine.projections import JobFilter
from engine.schema import install_schema

SUPERSEDED = {
    # the key alone: two job names deriving one natural key collided
    "job_dedupe_live_v1": "(idempotency_key)",
    # name + key: two tenants sharing a natural key collided
    "job_dedupe_live_v2": "(name, idempotency_key)",
}


def _indexes(dsn: str) -> dict[str, str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("select indexname, indexdef from pg_indexes where schemaname = 'jobs'").fetchall()
    return {name: d for name, d in rows}


def _older_install(dsn: str, *statements: str) -> None:
    """Install today's schema, then run ``statements`` to make the database look like what an
    older release's install left behind."""
    install_schema(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for sql in statements:
            conn.execute(sql)  # type: ignore[arg-type]


def test_i3_install_is_rerunnable_and_drops_superseded_narrower_indexes(pg_server_empty_dsn: str) -> None:
    dsn = pg_server_empty_dsn
    # A database that shipped an older version still carries the narrower unique indexes.
    _older_install(
        dsn,
        *(
            f"create unique index {name} on jobs.job {cols} where state in ('ready','delayed','running','suspended')"
            for name, cols in SUPERSEDED.items()
        ),
    )
    install_schema(dsn)
    install_schema(dsn)  # twice more: a no-op
    idx = _indexes(dsn)
    assert not set(SUPERSEDED) & set(idx)
    live = idx["job_dedupe_live_v3"]
    assert "UNIQUE" in live and "COALESCE(tenant, ''::text)" in live and "parked" in live
    with psycopg.connect(dsn) as conn:
        assert conn.execute("select value from jobs.meta where key = 'schema_version'").fetchone() == (
            str(SCHEMA_VERSION),
        )


def test_every_named_statement_is_used_by_the_postgres_driver() -> None:
    root = Path(__file__).resolve().parents[2] / "engine"
    code = "\n".join(p.read_text() for p in root.rglob("*.py"))
    unused = [name for name in load_queries() if f"Q.{name}." not in code and f"Q.{name}," not in code]
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
    assert set(names) == {"id", "name", "queue", "tenant", "key", "input", "run_at", "now", "priority", "max_attempts"}


def test_i3_install_replaces_the_all_state_list_indexes_with_ones_the_claim_never_writes(
    pg_server_empty_dsn: str,
) -> None:
    dsn = pg_server_empty_dsn
    # What an install of the first schema left: list indexes over every state, and foreign keys.
    _older_install(
        dsn,
        "create index job_state_id on jobs.job (state, id desc)",
        "create index job_name_id on jobs.job (name, id desc)",
        "create index job_input on jobs.job using gin (input jsonb_path_ops)",
        "create index job_running_lease_old on jobs.job (lease_until) where state = 'running'",
        "alter table jobs.attempt add constraint attempt_job_id_fkey foreign key (job_id) references jobs.job (id) on delete cascade",
    )
    install_schema(dsn)
    idx = _indexes(dsn)
    assert not {"job_state_id", "job_name_id", "job_input"} & set(idx)
    for name in ("job_list_state", "job_list_name", "job_list_input", "job_list_key", "job_list_tenant"):
        assert name in idx and "(state <> 'running'::text)" in idx[name]
    with psycopg.connect(dsn) as conn:
        fks = conn.execute(
            "select conname from pg_constraint where contype = 'f' and connamespace = 'jobs'::regnamespace"
        ).fetchall()
    assert fks == []


def test_no_named_statement_holds_a_bare_percent_sign() -> None:
    # psycopg reads every % as a placeholder, even in a comment: "~15%" failed the worker's claim.
    import re

    bad = [name for name, q in load_queries().items() if re.search(r"%(?![(%])", q.text.replace("%%", ""))]
    assert bad == []


def test_dead_letters_are_grouped_from_an_index_only_scan(pg_server_empty_dsn: str) -> None:
    # Postgres scans index-only only when every column the query names is in the index: an
    # expression index (coalesce(error_code, '')) sent every dead row to the heap.
    dsn = pg_server_empty_dsn
    _older_install(
        dsn,
        "create index job_dead_v3 on jobs.job (name, (coalesce(error_code, ''))) where state = 'dead'",
        "create index job_dead_v4 on jobs.job (name, error_code, stop_reason, tenant, finished_at) where state = 'dead'",
    )
    install_schema(dsn)
    assert "job_dead_v3" not in _indexes(dsn)
    assert "job_dead_v4" not in _indexes(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("set enable_seqscan = off")
        conn.execute("set enable_bitmapscan = off")
        plan = "\n".join(
            r[0] for r in conn.execute("explain " + Q.dead_groups.text, filter_params(JobFilter())).fetchall()
        )
    assert "Index Only Scan using job_dead_v5" in plan


async def test_a_database_installed_by_the_previous_schema_is_refused_until_jobs_install(
    pg_server_empty_dsn: str,
) -> None:
    # Version 1 had no gauge snapshot and no throughput rollup: the worker's gauges and the queues
    # view would fail on their first statement, so the driver refuses the database at open instead.
    from engine.drivers.postgres import PostgresDriver

    dsn = pg_server_empty_dsn
    _older_install(
        dsn,
        "drop table jobs.gauge_snapshot, jobs.throughput_minute",
        "delete from jobs.meta where key = 'throughput_rolled_until'",
        "update jobs.meta set value = '1' where key = 'schema_version'",
    )
    driver = PostgresDriver(dsn)
    try:
        with pytest.raises(JobsError) as err:
            await driver.open()
        assert err.value.code == "X_SCHEMA_OUTDATED" and "jobs install" in err.value.fix
        install_schema(dsn)
        await driver.open()
        assert await driver.queue_gauges(now=datetime.now(UTC)) == []
    finally:
        await driver.close()
