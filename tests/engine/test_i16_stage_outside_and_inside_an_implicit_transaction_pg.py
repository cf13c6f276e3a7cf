"""I16 on PostgreSQL for the two cases a caller meets without `conn.transaction()`:
- a plain psycopg connection (not autocommit) on which nothing ran yet: psycopg opens the caller's
  transaction with the first statement, so the stage is that statement and joins it: the caller's
  rollback leaves no trace, its commit keeps the row;
- an autocommit connection: nothing to join, so the sync `stage()` publishes the job directly (no
  outbox row), and in outbox_mode='required' it is refused with X_OUTBOX_NO_TX."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from engine.api import Engine
from engine.drivers.postgres import PostgresDriver
from engine.errors import JobsError
from engine.jobs import job
from tests.engine.test_outbox_pg import _count


@job(name="i16_confirm", queue="orders", idempotency_key=lambda inp: f"order:{inp['order']}")
async def i16_confirm(ctx: Any, inp: Any) -> None:
    return None


def test_i16_a_stage_as_the_first_statement_of_a_plain_connection_joins_its_transaction(pg_dsn: str) -> None:
    eng = Engine(PostgresDriver(pg_dsn))
    try:
        with psycopg.connect(pg_dsn) as conn:  # not autocommit, idle: the first statement begins
            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            rolled = eng.stage(conn, i16_confirm, {"order": 1})
            assert rolled.published is None  # staged in the caller's transaction, not published
            conn.rollback()
            kept = eng.stage(conn, i16_confirm, {"order": 2})
            conn.commit()
        assert _count(pg_dsn, "select count(*) from jobs.outbox where id = %s", rolled.id) == 0
        assert _count(pg_dsn, "select count(*) from jobs.job where id = %s", rolled.id) == 0  # no trace
        assert _count(pg_dsn, "select count(*) from jobs.outbox where id = %s", kept.id) == 1
    finally:
        eng.close()


def test_i16_a_sync_stage_on_an_autocommit_connection_publishes_directly_unless_required(pg_dsn: str) -> None:
    eng = Engine(PostgresDriver(pg_dsn))
    strict = Engine(PostgresDriver(pg_dsn), outbox_mode="required")
    try:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            direct = eng.stage(conn, i16_confirm, {"order": 3})
            assert direct.published is not None and not direct.published.deduped
            with pytest.raises(JobsError) as err:
                strict.stage(conn, i16_confirm, {"order": 4})
        assert err.value.code == "X_OUTBOX_NO_TX" and "required" in err.value.cause
        assert _count(pg_dsn, "select count(*) from jobs.job where id = %s", direct.id) == 1  # a job now
        assert _count(pg_dsn, "select count(*) from jobs.outbox") == 0  # and no outbox row, nor order 4's
    finally:
        eng.close()
        strict.close()
