"""The audit log of the schedules' and the backfills' operator actions, on every driver: a cron
task's pause, resume and trigger, a backfill pass's start and retry each add one entry, in the
transaction of their change, naming who, what and the pass or job; an action that changes nothing
adds none, and one whose entry cannot be written does not land."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, TypeVar

import psycopg
import pytest

from engine.actions import Operator
from engine.api import Engine
from engine.backfills import BackfillControl, Backfills, Batch
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.ids import IdFactory
from engine.introspect.schedules import Schedules
from engine.records import AuditEntry
from engine.retry import RetryPolicy
from engine.schedule import TaskDecl, trigger_key
from engine.testing import Factory
from engine.types import JobState

T = TypeVar("T")
TASK = "reports.nightly"
NAME = "flags"


def _task() -> TaskDecl:
    return TaskDecl(TASK, "0 3 * * *", "UTC", "skip", 100, "cron", 3, 0, '{"region": "eu"}')


def _backfills() -> Backfills:
    bf = Backfills(version="9")

    @bf.backfill(NAME, source=lambda conn, after, size: ([], after), count=lambda conn: 0)
    def flags(batch: Batch) -> None:
        pass

    return bf


async def _added(driver: Driver, clock: FakeClock, act: Callable[[], Awaitable[T]]) -> tuple[T, list[AuditEntry]]:
    """What ``act`` answers, and the entries it added to the log, oldest first."""
    ops = Operator(driver, clock=clock, actor="reader")
    before = {e.id for e in await ops.audit(limit=1000)}
    answer = await act()
    return answer, [e for e in reversed(await ops.audit(limit=1000)) if e.id not in before]


def _said(e: AuditEntry) -> tuple[Any, ...]:
    return (e.action, e.target, e.actor, e.note, e.tenant, e.detail)


async def test_a_tasks_pause_and_resume_each_add_one_entry_and_a_repeat_adds_none(
    driver: Driver, clock: FakeClock
) -> None:
    await driver.schedule_declare(tasks=[_task()], now=clock.now())
    ann, bob = Schedules(driver, actor="ann", clock=clock), Schedules(driver, actor="bob", clock=clock)
    paused, [entry] = await _added(driver, clock, lambda: ann.pause(TASK, note="INC-4: report double-sends"))
    assert paused.changed and _said(entry) == ("schedule.pause", TASK, "ann", "INC-4: report double-sends", None, {})
    assert entry.at == clock.now()
    again, none = await _added(driver, clock, lambda: bob.pause(TASK, note="me too"))
    assert (again.changed, none) == (False, [])
    clock.advance(60)
    resumed, [entry] = await _added(driver, clock, lambda: bob.resume(TASK, note="INC-4: fixed"))
    assert resumed.changed and _said(entry) == ("schedule.resume", TASK, "bob", "INC-4: fixed", None, {})
    assert entry.at == clock.now()
    still, none = await _added(driver, clock, lambda: ann.resume(TASK))
    assert (still.changed, none) == (False, [])


async def test_a_trigger_adds_one_entry_naming_its_job_and_key_and_a_trigger_that_enqueues_nothing_adds_none(
    driver: Driver, clock: FakeClock
) -> None:
    await driver.schedule_declare(tasks=[_task()], now=clock.now())
    ann = Schedules(driver, actor="ann", clock=clock)
    job_id, [entry] = await _added(driver, clock, lambda: ann.trigger(TASK, note="rerun for finance"))
    key = trigger_key(TASK, clock.now())
    assert _said(entry) == ("schedule.trigger", TASK, "ann", "rerun for finance", None, {"job_id": job_id, "key": key})
    assert entry.at == clock.now()

    async def twice() -> None:  # the same instant's key: its job is live, so nothing is enqueued
        with pytest.raises(JobsError) as refused:
            await ann.trigger(TASK)
        assert refused.value.code == X_INVALID_ARGUMENT

    _, none = await _added(driver, clock, twice)
    assert none == []


async def test_a_backfill_start_adds_one_entry_naming_its_pass_environment_and_whether_it_writes(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    ctl = BackfillControl(Engine(driver, clock=clock, ids=ids), _backfills(), actor="ann", environment="production")
    dry, [entry] = await _added(driver, clock, lambda: ctl.start(NAME))
    detail = {"pass": dry.run_id, "environment": "production", "write": False, "forced": False, "job_id": dry.job_id}
    assert _said(entry) == ("backfill.start", NAME, "ann", None, None, detail)
    await Factory.of(ctl.engine).cancel(dry.job_id)  # the dry run's pass ends: a write pass may start
    clock.advance(60)
    wet, added = await _added(driver, clock, lambda: ctl.start(NAME, write=True))
    assert [
        (e.action, e.detail["pass"], e.detail["write"], e.at) for e in added if e.action.startswith("backfill.")
    ] == [("backfill.start", wet.run_id, True, clock.now())]


async def test_a_pass_row_written_once_adds_one_start_entry_whoever_writes_it(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    """The starter or the pass itself when it begins first: the ledger row is written once, and with
    it the one entry; the other's write finds the row and adds nothing."""
    ctl = BackfillControl(Engine(driver, clock=clock, ids=ids), _backfills(), actor="ann", environment="production")
    started = await ctl.start(NAME, write=True)
    [run] = await ctl.history(NAME)
    as_the_pass_writes_it = replace(run, started_at=clock.now(), status="queued")
    written, none = await _added(driver, clock, lambda: driver.backfill_open(run=as_the_pass_writes_it))
    assert (written, none) == (False, [])
    entries = await Operator(driver, clock=clock, actor="reader").audit(action="backfill.start")
    assert [(e.target, e.actor, e.detail["pass"]) for e in entries] == [(NAME, "ann", started.run_id)]
    # The other order: a pass that begins before its starter's write lands (or after the starter
    # died) writes the row, and the entry naming the operator who started it, from its input.
    clock.advance(60)
    first = replace(run, id=ids.new(), name="other", job_id=ids.new(), started_at=clock.now(), actor="bob")
    written, [entry] = await _added(driver, clock, lambda: driver.backfill_open(run=first))
    assert written and (entry.action, entry.target, entry.actor, entry.at) == (
        "backfill.start",
        "other",
        "bob",
        first.started_at,
    )
    written, none = await _added(driver, clock, lambda: driver.backfill_open(run=replace(first, actor="ann")))
    assert (written, none) == (False, [])


async def test_a_backfill_retry_adds_one_entry_naming_its_pass_and_a_retry_of_a_live_pass_adds_none(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    eng = Engine(driver, clock=clock, ids=ids)
    ctl = BackfillControl(eng, _backfills(), actor="ann", environment="production")
    started = await ctl.start(NAME, write=True)
    bob = BackfillControl(eng, _backfills(), actor="bob", environment="production")
    live, none = await _added(driver, clock, lambda: bob.retry(NAME, note="try again"))
    assert (live.changed, none) == (False, [])
    f = Factory.of(eng)
    while (await f.get(started.job_id)).state is not JobState.DEAD:  # as a worker burns its attempts
        await f.fail(await f.claim(started.job_id), JobsError("X_BOOM", "boom", "-"), RetryPolicy(attempts=2))
        f.advance(60)
    retried, [entry] = await _added(driver, clock, lambda: bob.retry(NAME, note="INC-8: source fixed"))
    assert retried.changed
    detail = {"pass": started.run_id, "environment": "production", "write": True, "job_id": started.job_id}
    assert _said(entry) == ("backfill.retry", NAME, "bob", "INC-8: source fixed", None, detail | {"from": "dead"})
    assert entry.at == clock.now()


async def test_a_schedule_or_backfill_action_whose_audit_entry_cannot_be_written_does_not_land(
    pg_dsn: str, clock: FakeClock, ids: IdFactory
) -> None:
    from engine.drivers.postgres import PostgresDriver

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(
            "alter table jobs.audit_log add constraint no_schedules_or_backfills"
            " check (action not like 'schedule.%' and action not like 'backfill.%')"
        )
    driver = PostgresDriver(pg_dsn)
    await driver.open()
    try:
        await driver.schedule_declare(tasks=[_task()], now=clock.now())
        ann = Schedules(driver, actor="ann", clock=clock)
        with pytest.raises(psycopg.errors.CheckViolation):
            await ann.pause(TASK)
        [row] = await driver.schedule_list()
        assert not row.paused  # the pause rolled back with its entry
        with pytest.raises(psycopg.errors.CheckViolation):
            await ann.trigger(TASK)
        assert await driver.schedule_list() == [row]
        with psycopg.connect(pg_dsn) as conn:
            jobs = conn.execute("select count(*) from jobs.job where name = %s", [TASK]).fetchone()
        assert jobs == (0,)  # the triggered job rolled back with its entry

        eng = Engine(driver, clock=clock, ids=ids)
        ctl = BackfillControl(eng, _backfills(), actor="ann", environment="production")
        with pytest.raises(psycopg.errors.CheckViolation):
            await ctl.start(NAME, write=True)
        assert await ctl.history(NAME) == []  # no ledger row without its entry
        [live] = await driver.backfill_live(job_names=[f"backfill:{NAME}"])
        f = Factory.of(eng)
        await f.cancel(live.job_id)
        with pytest.raises(psycopg.errors.CheckViolation):
            await driver.backfill_pass_resume(job_id=live.job_id, now=clock.now(), actor="ann", note=None)
        assert (await f.get(live.job_id)).state is JobState.CANCELLED  # not made ready without its entry
    finally:
        await driver.close()
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("alter table jobs.audit_log drop constraint no_schedules_or_backfills")
