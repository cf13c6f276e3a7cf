"""The audit log's entries of a retry from a step and an event sent (engine/audit.py): each adds one
entry in the transaction of its change, naming what it acted on, who, the note and the tenant it
acted within; a retry from a step that is refused adds none. The same on every driver."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from engine.actions import Operator
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.testing import claim_of, make_job
from engine.types import Ack, JobRow, JobState, Nack, StoredStep


async def completed_with_steps(driver: Driver, ids: IdFactory, clock: FakeClock) -> JobRow:
    row = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, tenant="acme", queue="reports")
    t = datetime(2026, 1, 1, 12, tzinfo=UTC)
    for seq, name in enumerate(("fetch", "render", "send")):
        step = StoredStep(row.id, name, seq, "run", "completed", 1, row.run, t, t, {"n": seq})
        assert await driver.step_save(claim=claim_of(row), step=step)
    assert await driver.job_ack_many(acks=[Ack(claim_of(row), {"ok": 1})], now=clock.now()) == [row.id]
    return row


async def test_a_retry_from_a_step_adds_one_entry_naming_the_step_and_what_it_discarded(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    row = await completed_with_steps(driver, ids, clock)
    clock.advance(10)
    ops = Operator(driver, clock=clock, actor="ann")
    await ops.retry_from_step(row.id, "render", note="INC-3: template fixed")
    (e,) = await ops.audit()
    assert (e.action, e.target, e.actor, e.note, e.tenant, e.at) == (
        "job.retry_from_step",
        row.id,
        "ann",
        "INC-3: template fixed",
        "acme",
        clock.now(),
    )
    assert e.detail == {
        "name": "send_email",
        "queue": "reports",
        "step": "render",
        "from": "completed",
        "discarded": ["render", "send"],
    }


async def test_a_retry_from_a_step_that_is_refused_adds_no_entry(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    row = await completed_with_steps(driver, ids, clock)
    ready = await make_job(driver, ids, clock.now())
    ops = Operator(driver, clock=clock, actor="ann")
    for job_id, step in ((row.id, "nope"), (ready.id, "fetch")):
        with pytest.raises(JobsError):
            await ops.retry_from_step(job_id, step)
    assert await ops.audit() == []


async def test_a_sent_event_adds_no_entry_it_is_the_applications_traffic_kept_in_its_own_row(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    row = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, tenant="acme")
    wait = {"kind": "event", "event": "invoice.paid", "match": {"invoice": 42}}
    later = clock.now() + timedelta(hours=1)
    assert await driver.job_nack(nack=Nack(claim_of(row), "suspend", run_at=later, wait=wait), now=clock.now())
    ops = Operator(driver, clock=clock, actor="ann")
    sent = await ops.send_event("invoice.paid", {"invoice": 42}, tenant="acme")
    assert sent.woken == 1
    assert await ops.audit() == []


async def test_a_retry_from_a_step_whose_audit_entry_cannot_be_written_does_not_land(
    pg_dsn: str, ids: IdFactory, clock: FakeClock
) -> None:
    from engine.drivers.postgres import PostgresDriver

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("alter table jobs.audit_log add constraint no_entries check (action <> 'job.retry_from_step')")
    driver = PostgresDriver(pg_dsn)
    await driver.open()
    try:
        row = await completed_with_steps(driver, ids, clock)
        before = await driver.job_get(job_id=row.id)
        ops = Operator(driver, clock=clock, actor="ann")
        with pytest.raises(psycopg.errors.CheckViolation):
            await ops.retry_from_step(row.id, "render")
        assert await driver.job_get(job_id=row.id) == before
        assert [s.name for s in await driver.step_list(job_id=row.id)] == ["fetch", "render", "send"]
        assert await ops.audit() == []
    finally:
        await driver.close()
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("alter table jobs.audit_log drop constraint no_entries")
