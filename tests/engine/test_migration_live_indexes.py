"""0011_live_indexes: the console's live-list indexes fold into the dedupe index and one
(queue, state, id) index. An upgrade from 0010 with live jobs equals a fresh install; a key held
before it is still deduped by every enqueue path, and a replayed key is still recognised by the
index name every release's driver knows; the lists find live rows by name, tenant and key prefix,
and still list a row a worker of a release before 0010 settles in place."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime

import psycopg
import pytest

from engine.drivers.migrations import migrations
from engine.drivers.postgres.jobs import DEDUPE_INDEX
from engine.introspect import parse_filter
from engine.schema import migrate
from engine.types import NewJob
from tests.engine.test_migrations import catalog
from tests.engine.upgrades import job_uuid, opened

LIVE_INDEXES = next(m.version for m in migrations() if m.name == "live_indexes")
NOW = datetime(2026, 12, 4, 12, tzinfo=UTC)
_n = itertools.count(1)


def _jobs() -> list[NewJob]:
    """Three live jobs: two tenants and none, keys sharing the prefix 'inv:'."""
    return [
        NewJob(job_uuid(1), "charge", "billing", "inv:1", {"n": 1}, 3, "acme"),
        NewJob(job_uuid(2), "charge", "billing", "inv:2", {"n": 2}, 3, "globex"),
        NewJob(job_uuid(3), "refund", "billing", "ord:3", {"n": 3}, 3),
    ]


async def test_upgrading_0010_with_live_jobs_equals_a_fresh_install_and_keeps_every_key(
    empty_db: Callable[[], str],
) -> None:
    fresh, upgraded = empty_db(), empty_db()
    migrate(fresh)
    migrate(upgraded, target=LIVE_INDEXES - 1)
    with psycopg.connect(upgraded) as conn:  # as a 0010 release's enqueue wrote them
        for j in _jobs():
            conn.execute(
                "insert into jobs.job (id, name, queue, tenant, idempotency_key, input, state, max_attempts, run_at,"
                " created_at, updated_at) values (%s, %s, %s, %s, %s, '{}', 'ready', 3, %s, %s, %s)",
                (j.id, j.name, j.queue, j.tenant, j.idempotency_key, NOW, NOW, NOW),
            )
    migrate(upgraded)
    assert catalog(upgraded) == catalog(fresh)
    async with opened(upgraded) as driver:
        for held in _jobs():  # the single enqueue's statement
            (answer,) = await driver.job_enqueue(jobs=[held._replace(id=job_uuid(90))], now=NOW)
            assert (answer.id, answer.deduped) == (held.id, True)
        # A batch goes out as a plain insert first; the replayed key's unique violation names the
        # index every release's driver recognises, and the batch is sent again with ON CONFLICT.
        replay = [
            _jobs()[1]._replace(id=job_uuid(91)),
            NewJob(job_uuid(92), "charge", "billing", "inv:9", {}, 3, "acme"),
        ]
        answers = await driver.job_enqueue(jobs=replay, now=NOW)
        assert [(a.id, a.deduped) for a in answers] == [(job_uuid(2), True), (job_uuid(92), False)]
    with psycopg.connect(upgraded) as conn, pytest.raises(psycopg.errors.UniqueViolation) as raised:
        conn.execute(
            "insert into jobs.job (id, name, queue, tenant, idempotency_key, input, state, max_attempts, run_at,"
            " created_at, updated_at) values (%s, 'charge', 'billing', 'acme', 'inv:1', '{}', 'ready', 3, %s, %s, %s)",
            (job_uuid(93), NOW, NOW, NOW),
        )
    assert raised.value.diag.constraint_name == DEDUPE_INDEX


async def test_the_lists_find_live_rows_by_name_tenant_and_key_prefix_and_rows_settled_in_place(
    empty_db: Callable[[], str],
) -> None:
    dsn = empty_db()
    migrate(dsn)
    async with opened(dsn) as driver:
        await driver.job_enqueue(jobs=_jobs(), now=NOW)
        with psycopg.connect(dsn) as conn:  # a release before 0010 settles in place: the row stays in jobs.job
            conn.execute(
                "insert into jobs.job (id, name, queue, tenant, idempotency_key, input, state, max_attempts,"
                " run_at, created_at, updated_at, finished_at, error_code, stop_reason)"
                " values (%s, 'charge', 'billing', 'acme', 'inv:0', '{}', 'dead', 3, %s, %s, %s, %s, 'X_OLD', 'terminal')",
                (job_uuid(0), NOW, NOW, NOW, NOW),
            )

        async def listed(text: str) -> tuple[list[str], int]:
            page = await driver.job_page(where=parse_filter(text), limit=10, cursor=None, count_cap=100, budget_ms=None)
            return [r.id for r in page.items], page.total.value

        assert await listed("name=charge") == ([job_uuid(2), job_uuid(1), job_uuid(0)], 3)
        assert await listed("tenant=acme") == ([job_uuid(1), job_uuid(0)], 2)
        assert await listed("search=inv:") == ([job_uuid(2), job_uuid(1), job_uuid(0)], 3)
        assert await listed("tenant=globex search=inv:") == ([job_uuid(2)], 1)
        assert await listed("state=dead") == ([job_uuid(0)], 1)
        assert await listed("") == ([job_uuid(3), job_uuid(2), job_uuid(1), job_uuid(0)], 4)
