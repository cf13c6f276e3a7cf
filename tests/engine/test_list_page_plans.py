"""The console's jobs list over the two tables (0010_settled_rows: live rows in jobs.job, settled
ones in jobs.job_done): a page is an ordered merge of one index walk per table that stops at the
page size, so a filter whose matches are all in one table never walks the other one by id. Read
through jobs.job as one Append, a page of dead jobs walked every live row newest first to find
none (96 ms at 1,000,000 jobs, python -m bench.projections)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from bench.sqlq import fragment
from engine.drivers.postgres.introspect import filter_params
from engine.drivers.sqlfiles import Q
from engine.introspect import parse_filter

LIVE, SETTLED, PAGE = 3_000, 3_000, 51
UUID7_AT = fragment("bench", "uuid7_at")  # a UUIDv7 at the row's time `at`, on any server version
NOW = datetime(2026, 12, 4, 12, tzinfo=UTC)


def _read(plan: dict[str, Any], out: dict[str, int]) -> dict[str, int]:
    """Rows each table's scans read (returned + removed by a filter), keyed by table."""
    table = plan.get("Relation Name")
    if table in ("job", "job_done") and "Scan" in plan.get("Node Type", ""):
        rows = plan.get("Actual Rows", 0) + plan.get("Rows Removed by Filter", 0)
        out[table] = out.get(table, 0) + int(rows + plan.get("Rows Removed by Index Recheck", 0))
    for child in plan.get("Plans", []):
        _read(child, out)
    return out


@pytest.fixture
def both_tables(pg_dsn: str) -> str:
    """LIVE ready rows (job 'live', tenant 'tl') in jobs.job and SETTLED dead rows (job 'gone',
    tenant 'td', code X_GONE) in jobs.job_done, interleaved in id order, analyzed."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for table, name, state in (("jobs.job", "live", "ready"), ("jobs.job_done", "gone", "dead")):
            conn.execute(
                f"""insert into {table} (id, name, queue, tenant, idempotency_key, input, state, attempt,
                                         max_attempts, run, run_at, created_at, updated_at, finished_at,
                                         error_code, stop_reason)
                    select {UUID7_AT}, %(name)s, 'q', %(tenant)s, %(name)s || i,
                           jsonb_build_object('i', i), %(state)s, 0, 1, 0, %(now)s, %(now)s, %(now)s,
                           case when %(state)s = 'dead' then %(now)s::timestamptz end,
                           case when %(state)s = 'dead' then 'X_GONE' end,
                           case when %(state)s = 'dead' then 'terminal' end
                    from (select i, %(now)s::timestamptz + i * interval '1 second' as at
                          from generate_series(1, %(n)s) as i) as s""",  # noqa: S608
                {"name": name, "tenant": "t" + name[0], "state": state, "now": NOW, "n": LIVE},
            )
        conn.execute("vacuum analyze jobs.job, jobs.job_done")
    return pg_dsn


def _plan(dsn: str, statement: str, text: str) -> dict[str, int]:
    params = filter_params(parse_filter(text)) | {"cursor": None, "limit": PAGE, "cap": 10_000}
    with psycopg.connect(dsn) as conn:
        conn.execute("set plan_cache_mode = force_custom_plan")  # as budget_set sets it
        doc = conn.execute(f"explain (analyze, format json) {getattr(Q, statement).text}", params).fetchone()
    assert doc is not None
    return _read(doc[0][0]["Plan"], {})


@pytest.mark.parametrize(
    ("text", "other"),
    [
        ("state=dead", "job"),
        ("name=gone", "job"),
        ("tenant=tg", "job"),
        ("state=dead code=X_GONE", "job"),
        ("state=ready", "job_done"),
        ("name=live", "job_done"),
        ("tenant=tl", "job_done"),
    ],
)
def test_a_filtered_page_walks_each_table_no_further_than_the_page(both_tables: str, text: str, other: str) -> None:
    read = _plan(both_tables, "job_page", text)
    # The table holding the matches is read up to the page; the other finds none and reads none.
    assert read.get(other, 0) == 0 and all(n <= PAGE for n in read.values()), (text, read)


@pytest.mark.parametrize(("text", "other"), [("state=dead", "job"), ("name=gone", "job"), ("name=live", "job_done")])
def test_a_filtered_count_reads_nothing_of_the_table_without_matches(both_tables: str, text: str, other: str) -> None:
    read = _plan(both_tables, "job_page_count", text)
    assert read.get(other, 0) == 0, (text, read)


def test_the_unfiltered_page_reads_one_page_of_each_table(both_tables: str) -> None:
    read = _plan(both_tables, "job_page", "")
    assert set(read) == {"job", "job_done"} and all(n <= PAGE for n in read.values()), read
