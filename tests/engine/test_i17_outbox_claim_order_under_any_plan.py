"""I17 on PostgreSQL whatever plan the server picks: the relay's claim takes the oldest unpublished
rows by its own ORDER BY (staged_at, id), not by the order an index happens to read them in. With
index scans off (a plan the server may choose for a small or freshly analysed outbox) the rows are
read in storage order, where a row rewritten by a release sits after the rows staged after it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest

from engine.clock import FakeClock
from engine.drivers.postgres import PostgresDriver
from engine.ids import IdFactory
from tests.contract.test_outbox import LEASE_MS, engine, stage_orders


@pytest.fixture
async def seq_scan_driver(pg_dsn: str) -> AsyncIterator[PostgresDriver]:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        db = conn.info.dbname
        for setting in ("enable_indexscan", "enable_bitmapscan", "enable_indexonlyscan"):
            conn.execute(f'alter database "{db}" set {setting} = off')  # type: ignore[arg-type]
    d = PostgresDriver(pg_dsn)
    await d.open()
    try:
        yield d
    finally:
        await d.close()


async def test_i17_a_released_row_is_claimed_first_when_the_outbox_is_read_in_storage_order(
    seq_scan_driver: PostgresDriver, clock: FakeClock, ids: IdFactory
) -> None:
    driver = seq_scan_driver
    eng = engine(driver, clock, ids)
    staged: list[str] = []
    for n in (1, 2, 3):
        staged += await stage_orders(eng, driver, [n])
        clock.advance(1)
    token = ids.new()
    (first,) = await driver.outbox_claim(relay="A", token=token, limit=1, now=clock.now(), lease_ms=LEASE_MS)
    assert first.id == staged[0]
    assert await driver.outbox_release(
        token=token, ids=[first.id], failed=first.id, error="ConnectionError: blip", now=clock.now()
    ) == [staged[0]]
    (again,) = await driver.outbox_claim(relay="B", token=ids.new(), limit=1, now=clock.now(), lease_ms=LEASE_MS)
    assert again.id == staged[0]  # the failed row first: no later row overtakes it (I20)
    rest = await driver.outbox_claim(relay="C", token=ids.new(), limit=10, now=clock.now(), lease_ms=LEASE_MS)
    assert [x.id for x in rest] == staged[1:]
