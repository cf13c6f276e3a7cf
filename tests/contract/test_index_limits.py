"""A key or a tenant PostgreSQL's indexes could not hold is refused before anything is written, the
same on both drivers, at every door (an enqueue, a stage, an event). A value past the server's own
limits that reaches it anyway (a row an older release staged) is the statement's error,
X_TOO_LARGE: never a lost connection retried for ever, and the connection stays usable."""

from __future__ import annotations

import hashlib
from typing import Any

import psycopg
import pytest

from engine.api import Engine, Enqueue
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, X_TOO_LARGE, JobsError
from engine.ids import IdFactory
from engine.jobs import job
from engine.projections import JobFilter
from engine.services.relay import Relay, RelayConfig
from engine.types import NewJob
from tests.contract.test_outbox import app_tx

# Hex of chained digests: text the server's compression cannot shrink below an index's limit.
UNSHRINKABLE = "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(50))


@job(name="keyed_by_text", queue="default", idempotency_key=lambda inp: inp["k"])
async def keyed_by_text(ctx: Any, inp: Any) -> None:
    return None


async def _nothing_written(driver: Driver) -> bool:
    page = await driver.job_page(where=JobFilter(), limit=10, cursor=None, count_cap=10, budget_ms=None)
    return page.items == ()


async def test_an_idempotency_key_past_1000_bytes_is_refused_before_anything_of_its_batch_is_written(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    eng = Engine(driver, clock=clock, ids=ids)
    with pytest.raises(JobsError) as err:
        await eng.aenqueue_many([Enqueue(keyed_by_text, {"k": "fine"}), Enqueue(keyed_by_text, {"k": "é" * 501})])
    assert err.value.code == X_INVALID_ARGUMENT and "1,002 bytes" in err.value.cause
    assert "hashlib.sha256" in err.value.fix
    assert await _nothing_written(driver)
    async with app_tx(driver) as tx:
        with pytest.raises(JobsError):
            await eng.astage(tx, keyed_by_text, {"k": UNSHRINKABLE})
    assert (await eng.aenqueue(keyed_by_text, {"k": "é" * 500})).deduped is False  # 1,000 bytes: taken


@pytest.mark.parametrize("tenant", [" acme", "acme ", "a" * 201, "  "])
async def test_a_tenant_too_long_or_with_space_around_it_is_refused_at_every_door(
    driver: Driver, ids: IdFactory, clock: FakeClock, tenant: str
) -> None:
    eng = Engine(driver, clock=clock, ids=ids)
    for door in (
        lambda: eng.aenqueue(keyed_by_text, {"k": "a"}, tenant=tenant),
        lambda: eng.asend_event("approved", {"id": 1}, tenant=tenant),
    ):
        with pytest.raises(JobsError) as err:
            await door()
        assert err.value.code == X_INVALID_ARGUMENT and err.value.fix == "tenant='acme'"
    assert await _nothing_written(driver)
    assert (await eng.aenqueue(keyed_by_text, {"k": "a"}, tenant="a" * 200)).deduped is False


async def test_a_key_past_the_servers_index_limit_is_x_too_large_not_a_lost_connection(
    pg_dsn: str, ids: IdFactory, clock: FakeClock
) -> None:
    from engine.drivers.postgres import PostgresDriver

    driver = PostgresDriver(pg_dsn)
    try:
        row = NewJob(ids.new(), "keyed_by_text", "default", UNSHRINKABLE, {}, 3)
        with pytest.raises(JobsError) as err:
            await driver.job_enqueue(jobs=[row], now=clock.now())
        assert err.value.code == X_TOO_LARGE and "index row" in err.value.cause
        fine = NewJob(ids.new(), "keyed_by_text", "default", "k", {}, 3)
        assert [r.deduped for r in await driver.job_enqueue(jobs=[fine], now=clock.now())] == [False]
    finally:
        await driver.close()


async def test_a_staged_row_past_the_servers_limits_is_a_failing_row_not_a_relay_retrying_for_ever(
    pg_dsn: str, ids: IdFactory, clock: FakeClock
) -> None:
    from engine.drivers.postgres import PostgresDriver

    driver = PostgresDriver(pg_dsn)
    eng = Engine(driver, clock=clock, ids=ids)
    try:
        async with app_tx(driver) as tx:
            staged = await eng.astage_many(tx, [Enqueue(keyed_by_text, {"k": k}) for k in ("first", "second")])
        async with await psycopg.AsyncConnection.connect(
            pg_dsn, autocommit=True
        ) as conn:  # as an older release wrote it
            await conn.execute(
                "update jobs.outbox set idempotency_key = %s where id = %s", (UNSHRINKABLE, staged[0].id)
            )
        relay = Relay(driver, clock, config=RelayConfig(id="r1", lease_ms=10_000, batch_size=10))
        res = await relay.run_once()
        assert res.failed == staged[0].id and res.error is not None and X_TOO_LARGE in res.error
        row = await driver.outbox_get(id=staged[0].id)
        assert row is not None and row.attempts == 1 and row.published_at is None
    finally:
        await driver.close()
