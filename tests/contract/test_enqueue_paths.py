"""The Postgres driver's two enqueue statements (one row: job_enqueue_one; a batch: job_enqueue)
mean the same thing; these pin the single-row path, which is the one a plain `enqueue()` takes."""

from __future__ import annotations

import re
from datetime import timedelta

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.drivers.sqlfiles import load_queries, schema_sql
from engine.ids import IdFactory
from engine.types import JobState, NewJob
from tests.factory import make_job


def _new(ids: IdFactory, key: str, **kw: object) -> NewJob:
    return NewJob(id=ids.new(), name="send_email", queue="default", idempotency_key=key,
                  input={"user_id": 7}, max_attempts=3, **kw)  # type: ignore[arg-type]


def test_i2_single_row_enqueue_spells_the_dedupe_index_exactly() -> None:
    norm = lambda s: re.sub(r"\s+", " ", s).strip().lower()  # noqa: E731
    idx = re.search(r"create unique index if not exists job_dedupe_live_v3 on jobs.job \((.*?)\) where state in \((.*?)\);",
                    norm(schema_sql()))
    assert idx is not None
    one = norm(load_queries()["job_enqueue_one"].text)
    assert f"on conflict ({idx.group(1)}) where state in ({idx.group(2)}) do nothing" in one


async def test_i2_single_enqueue_answers_the_live_row_of_its_own_tenant(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    now = clock.now()
    acme = await make_job(driver, ids, now, tenant="acme", key="invoice:1")
    other = (await driver.job_enqueue(jobs=[_new(ids, "invoice:1", tenant="globex")], now=now))[0]
    assert not other.deduped and other.id != acme.id
    again = (await driver.job_enqueue(jobs=[_new(ids, "invoice:1", tenant="acme")], now=now))[0]
    assert again.deduped and again.id == acme.id and again.state is JobState.READY
    done = await make_job(driver, ids, now, state=JobState.COMPLETED, key="order:9")
    fresh = (await driver.job_enqueue(jobs=[_new(ids, "order:9")], now=now))[0]
    assert not fresh.deduped and fresh.id != done.id  # a final row holds no key


async def test_single_enqueue_state_follows_run_at(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    now = clock.now()
    later = (await driver.job_enqueue(jobs=[_new(ids, "a", run_at=now + timedelta(seconds=5))], now=now))[0]
    due = (await driver.job_enqueue(jobs=[_new(ids, "b", run_at=now - timedelta(seconds=5))], now=now))[0]
    plain = (await driver.job_enqueue(jobs=[_new(ids, "c", priority=3)], now=now))[0]
    assert (later.state, due.state, plain.state) == (JobState.DELAYED, JobState.READY, JobState.READY)
    row = await driver.job_get(job_id=plain.id)
    assert row is not None and row.priority == 3 and row.input == {"user_id": 7} and row.run_at == now
