"""The audit log's entries of the job, worker and bulk actions (engine/audit.py): each action that
changed something adds one entry, in the transaction of its change, naming what it acted on, who,
the note, the tenant it acted within and what an on-call reader needs; one that changed nothing
adds none; a bulk run adds one summary of what landed and none per job. The same on every driver."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import psycopg
import pytest

from engine.actions import Operator
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.projections import BulkAction, BulkResult, JobFilter
from engine.records import AuditEntry
from engine.testing import claim_of, make_job
from engine.types import JobState, StoredStep, WorkerRegistration


def said(e: AuditEntry) -> tuple[object, ...]:
    return (e.action, e.target, e.actor, e.note, e.tenant, e.detail)


async def test_a_dead_jobs_retry_adds_one_entry_naming_the_job_its_tenant_name_queue_and_state(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD, tenant="acme", queue="emails")
    clock.advance(10)
    ops = Operator(driver, clock=clock, actor="ann")
    await ops.retry(dead.id, note="INC-7: smtp fixed")
    (e,) = await ops.audit()
    assert said(e) == (
        "job.retry",
        dead.id,
        "ann",
        "INC-7: smtp fixed",
        "acme",
        {"name": "send_email", "queue": "emails", "from": "dead"},
    )
    assert e.at == clock.now()


async def test_a_retry_of_a_job_not_dead_or_whose_key_is_held_adds_no_entry(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    ready = await make_job(driver, ids, clock.now())
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD, key="order:1")
    await make_job(driver, ids, clock.now(), key="order:1")  # holds the dead job's key
    ops = Operator(driver, clock=clock, actor="ann")
    for job_id in (ready.id, dead.id):
        with pytest.raises(JobsError):
            await ops.retry(job_id)
        assert await driver.job_retry_dead(job_id=job_id, tenant=None, now=clock.now(), actor="ann") is not None
    assert await ops.audit() == []


async def test_a_cancel_adds_one_entry_with_the_state_it_came_from_and_a_finished_jobs_adds_none(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    running = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, tenant="acme", name="charge")
    done = await make_job(driver, ids, clock.now(), state=JobState.COMPLETED)
    ops = Operator(driver, clock=clock, actor="ann")
    res = await ops.cancel(running.id, note="INC-8")
    again = await ops.cancel(running.id, note="INC-8")
    finished = await ops.cancel(done.id)
    assert (res.changed, again.changed, finished.changed) == (True, False, False)
    (e,) = await ops.audit()
    assert said(e) == (
        "job.cancel",
        running.id,
        "ann",
        "INC-8",
        "acme",
        {"name": "charge", "queue": "default", "from": "running"},
    )


async def test_a_cancel_with_children_adds_one_entry_for_each_job_it_cancelled(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    kids = [await make_job(driver, ids, clock.now(), name="leaf", queue="leaves") for _ in range(2)]
    settled = await make_job(driver, ids, clock.now(), state=JobState.COMPLETED, name="leaf", queue="leaves")
    top = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, name="fan", queue="fans")
    t = datetime(2026, 1, 1, 12, tzinfo=UTC)
    fan_out = [k.id for k in kids] + [settled.id]
    step = StoredStep(top.id, "fan-out", 0, "enqueue", "completed", 1, top.run, t, t, fan_out)
    assert await driver.step_save(claim=claim_of(top), step=step)
    ops = Operator(driver, clock=clock, actor="ann")
    res = await ops.cancel(top.id, note="INC-9", children=True)
    assert res.changed and len(res.also) == 2
    entries = await ops.audit()
    assert sorted((e.action, e.target, e.note, e.detail["name"], e.detail["from"]) for e in entries) == sorted(
        [("job.cancel", top.id, "INC-9", "fan", "running")]
        + [("job.cancel", k.id, f"INC-9 (with job {top.id})", "leaf", "ready") for k in kids]
    )


async def test_a_discard_adds_one_entry_saying_what_the_job_was_and_a_live_jobs_adds_none(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD, tenant="acme", queue="emails")
    live = await make_job(driver, ids, clock.now())
    ops = Operator(driver, clock=clock, actor="ann")
    await ops.discard(dead.id, note="poison message")
    with pytest.raises(JobsError):
        await ops.discard(live.id)
    assert (await driver.job_discard(job_id=live.id, tenant=None, now=clock.now(), actor="ann")).changed is False  # type: ignore[union-attr]
    (e,) = await ops.audit()
    assert said(e) == (
        "job.discard",
        dead.id,
        "ann",
        "poison message",
        "acme",
        {"name": "send_email", "queue": "emails", "from": "dead", "error_code": "X_BOOM", "stop_reason": "terminal"},
    )


async def test_a_drain_request_adds_one_entry_and_asking_again_adds_none(driver: Driver, clock: FakeClock) -> None:
    reg = WorkerRegistration(id="host:1:abc", host="h", pid=1, queues=("q",), concurrency=2)
    await driver.worker_register(worker=reg, now=clock.now())
    ops = Operator(driver, clock=clock, actor="ann")
    first = await ops.drain_worker("host:1:abc", note="host retiring")
    second = await Operator(driver, clock=clock, actor="bob").drain_worker("host:1:abc", note="again")
    assert (first.changed, second.changed) == (True, False)
    (e,) = await ops.audit()
    assert said(e) == ("worker.drain", "host:1:abc", "ann", "host retiring", None, {})
    assert e.at == clock.now()


@pytest.mark.parametrize("action", ["retry", "cancel", "discard"])
async def test_a_bulk_run_adds_one_summary_of_what_it_changed_and_no_entry_per_job(
    driver: Driver, ids: IdFactory, clock: FakeClock, action: BulkAction
) -> None:
    state = JobState.READY if action == "cancel" else JobState.DEAD
    for _ in range(5):
        await make_job(driver, ids, clock.now(), state=state, queue="emails", tenant="acme")
    await make_job(driver, ids, clock.now(), state=state, queue="other", tenant="acme")
    ops = Operator(driver, clock=clock, actor="ann", tenant="acme")
    where = JobFilter(queue="emails")
    plan = await ops.plan(action, where)
    clock.advance(5)
    res = await ops.bulk(action, where, note="INC-7", batch_size=2, plan=plan)
    assert res.changed == 5
    (e,) = await ops.audit()
    assert said(e) == (
        f"bulk.{action}",
        "queue=emails tenant=acme",
        "ann",
        "INC-7",
        "acme",
        {"changed": 5, "batches": 3, "stopped": False, "planned": 5},
    )
    assert e.at == clock.now()
    # A run that changes nothing adds none; one without a dry run says nothing of one.
    await ops.bulk(action, where)
    await make_job(driver, ids, clock.now(), state=state, queue="emails", tenant="acme")
    await ops.bulk(action, where)
    (newest, _) = await ops.audit()
    assert newest.detail == {"changed": 1, "batches": 1, "stopped": False}


async def test_a_stopped_bulk_run_still_adds_its_summary_of_what_landed(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    for _ in range(5):
        await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    stop = asyncio.Event()
    ops = Operator(driver, clock=clock, actor="ann")
    res = await ops.bulk("retry", note="INC-7", batch_size=2, stop=stop, progress=lambda r: stop.set())
    assert (res.changed, res.stopped) == (2, True)
    (e,) = await ops.audit()
    assert said(e) == (
        "bulk.retry",
        "(everything)",
        "ann",
        "INC-7",
        None,
        {"changed": 2, "batches": 1, "stopped": True},
    )


async def test_a_bulk_run_that_fails_midway_adds_its_summary_of_what_landed_and_raises_its_error(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    for _ in range(5):
        await make_job(driver, ids, clock.now(), state=JobState.READY)

    def told(r: BulkResult) -> None:
        raise RuntimeError("the terminal went away")

    ops = Operator(driver, clock=clock, actor="ann")
    with pytest.raises(RuntimeError, match="the terminal went away"):
        await ops.bulk("cancel", note="INC-7", batch_size=2, progress=told)
    (e,) = await ops.audit()
    assert (e.action, e.detail) == (
        "bulk.cancel",
        {"changed": 2, "batches": 1, "stopped": False, "error": "RuntimeError"},
    )


async def test_a_bulk_retry_with_children_adds_one_summary_beside_each_jobs_retry(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    dead = [await make_job(driver, ids, clock.now(), state=JobState.DEAD, queue="emails") for _ in range(3)]
    ops = Operator(driver, clock=clock, actor="ann")
    where = JobFilter(queue="emails")
    plan = await ops.plan("retry", where)
    got = [r async for r in ops.retry_all_with_children(where, note="INC-10", plan=plan)]
    assert [r.changed for r in got] == [True, True, True]
    summary, *each = await ops.audit()
    assert said(summary) == (
        "bulk.retry",
        "queue=emails",
        "ann",
        "INC-10",
        None,
        {"changed": 3, "batches": 3, "stopped": False, "planned": 3, "children": True},
    )
    assert sorted((e.action, e.target) for e in each) == sorted(("job.retry", d.id) for d in dead)


async def test_a_bulk_retry_with_children_left_early_adds_its_summary_of_what_landed(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    for _ in range(3):
        await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    ops = Operator(driver, clock=clock, actor="ann")
    stop = asyncio.Event()
    async for _ in ops.retry_all_with_children(note="INC-10", stop=stop):
        stop.set()
    gen = ops.retry_all_with_children(note="INC-11")
    await anext(gen)
    await gen.aclose()  # its reader went away after the first job
    summaries = [e for e in await ops.audit() if e.action == "bulk.retry"]
    assert [(e.note, e.detail) for e in summaries] == [
        ("INC-11", {"changed": 1, "batches": 1, "stopped": True, "children": True}),
        ("INC-10", {"changed": 1, "batches": 1, "stopped": True, "children": True}),
    ]


async def test_a_job_action_whose_audit_entry_cannot_be_written_does_not_land(
    pg_dsn: str, ids: IdFactory, clock: FakeClock
) -> None:
    from engine.drivers.postgres import PostgresDriver

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("alter table jobs.audit_log add constraint no_job_entries check (action not like 'job.%')")
        conn.execute("alter table jobs.audit_log add constraint no_drains check (action <> 'worker.drain')")
    driver = PostgresDriver(pg_dsn)
    await driver.open()
    try:
        dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD)
        doomed = await make_job(driver, ids, clock.now(), state=JobState.DEAD)
        ready = await make_job(driver, ids, clock.now())
        reg = WorkerRegistration(id="host:1:abc", host="h", pid=1, queues=("q",), concurrency=2)
        await driver.worker_register(worker=reg, now=clock.now())
        before = {j.id: await driver.job_history(job_id=j.id) for j in (dead, doomed, ready)}
        ops = Operator(driver, clock=clock, actor="ann")
        for act in (
            ops.retry(dead.id),
            ops.cancel(ready.id),
            ops.discard(doomed.id),
            ops.drain_worker("host:1:abc"),
        ):
            with pytest.raises(psycopg.errors.CheckViolation):
                await act
        for job in (dead, doomed, ready):
            assert await driver.job_get(job_id=job.id) == job  # each rolled back with its entry
            assert await driver.job_history(job_id=job.id) == before[job.id]
        (w,) = await driver.worker_list(now=clock.now())
        assert w.drain_requested_at is None
        assert await ops.audit() == []
    finally:
        await driver.close()
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("alter table jobs.audit_log drop constraint no_job_entries")
            conn.execute("alter table jobs.audit_log drop constraint no_drains")


async def test_a_dead_job_an_older_release_settled_in_place_adds_its_entry_when_retried(
    pg_dsn: str, ids: IdFactory, clock: FakeClock
) -> None:
    from engine.drivers.postgres import PostgresDriver

    driver = PostgresDriver(pg_dsn)
    await driver.open()
    try:
        running = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, tenant="acme")
        with psycopg.connect(pg_dsn, autocommit=True) as conn:  # as the release before 0010 settled it
            conn.execute(
                "update jobs.job set state = 'dead', finished_at = now(), stop_reason = 'terminal' where id = %s",
                (running.id,),
            )
        ops = Operator(driver, clock=clock, actor="ann")
        assert (await ops.retry(running.id)).changed
        (e,) = await ops.audit(target=running.id)
        assert said(e) == (
            "job.retry",
            running.id,
            "ann",
            None,
            "acme",
            {"name": "send_email", "queue": "default", "from": "dead"},
        )
    finally:
        await driver.close()
