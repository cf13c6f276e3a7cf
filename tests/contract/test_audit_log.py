"""The audit log (engine/audit.py): an operator action that changed something adds one entry in the
transaction of its change, read newest first with its filters, scoped to a tenant, pruned past its
retention; the same on every driver."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from engine.actions import Operator
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.records import AuditEntry
from engine.services.maintenance import Maintenance, MaintenanceConfig


async def test_a_pause_and_a_resume_each_add_one_entry_naming_who_when_what_and_its_note(
    driver: Driver, clock: FakeClock
) -> None:
    ann = Operator(driver, clock=clock, actor="ann")
    await ann.pause("billing", note="INC-9: gateway down", create=True)
    paused_at = clock.now()
    clock.advance(60)
    resumed = await Operator(driver, clock=clock, actor="bob").resume("billing", note="INC-9: fixed")
    assert (resumed.paused, resumed.changed, resumed.note) == (False, True, "INC-9: fixed")
    entries = await ann.audit()
    assert [(e.action, e.target, e.actor, e.note, e.tenant) for e in entries] == [
        ("queue.resume", "billing", "bob", "INC-9: fixed", None),
        ("queue.pause", "billing", "ann", "INC-9: gateway down", None),
    ]
    assert (entries[0].at, entries[1].at) == (clock.now(), paused_at)
    assert entries[0].id is not None and entries[1].id is not None and entries[0].id > entries[1].id


async def test_an_action_that_changes_nothing_adds_no_entry(driver: Driver, clock: FakeClock) -> None:
    ops = Operator(driver, clock=clock, actor="ann")
    await ops.pause("billing", create=True)
    again = await ops.pause("billing", note="twice", create=True)
    await ops.resume("billing")
    unpaused = await ops.resume("billing")
    assert (again.changed, unpaused.changed) == (False, False)
    assert [e.action for e in await ops.audit()] == ["queue.resume", "queue.pause"]


async def test_the_log_filters_by_target_actor_action_and_time_and_pages_below_an_id(
    driver: Driver, clock: FakeClock
) -> None:
    for i, (actor, queue) in enumerate([("ann", "a"), ("bob", "b"), ("ann", "b"), ("bob", "a")]):
        clock.advance(10)
        await Operator(driver, clock=clock, actor=actor).pause(queue, note=f"n{i}", create=True)
        await Operator(driver, clock=clock, actor=actor).resume(queue)
    ops = Operator(driver, clock=clock, actor="eve")
    every = await ops.audit()
    assert len(every) == 8
    assert [e.note for e in await ops.audit(target="b", action="queue.pause")] == ["n2", "n1"]
    assert {e.actor for e in await ops.audit(actor="ann")} == {"ann"}
    assert len(await ops.audit(actor="ann")) == 4
    assert [e.note for e in await ops.audit(since=clock.now() - timedelta(seconds=5), action="queue.pause")] == ["n3"]
    first = await ops.audit(limit=3)
    rest = await ops.audit(before=first[-1].id)
    assert [e.id for e in first + rest] == [e.id for e in every]


async def test_the_log_reads_by_time_then_id_and_pages_in_that_order(driver: Driver, clock: FakeClock) -> None:
    # Written in one order, stamped by clocks that disagree: read by when, the id breaking ties.
    for target, offset in (("a", 30), ("b", 10), ("c", 20), ("d", 10)):
        at = clock.now() + timedelta(seconds=offset)
        await driver.audit_add(entry=AuditEntry(at, "ann", "queue.pause", target))
    ops = Operator(driver, clock=clock, actor="ann")
    assert [e.target for e in await ops.audit()] == ["a", "c", "d", "b"]
    first = await ops.audit(limit=2)
    assert [e.target for e in await ops.audit(before=first[-1].id)] == ["d", "b"]


async def test_a_tenant_scoped_operator_reads_only_its_tenants_entries(driver: Driver, clock: FakeClock) -> None:
    await Operator(driver, clock=clock, actor="ann").pause("fleet-wide", create=True)
    for tenant in ("acme", "globex"):
        await driver.audit_add(
            entry=AuditEntry(clock.now(), "ann", "job.retry", f"job-of-{tenant}", tenant=tenant, detail={"n": 1})
        )
    acme = await Operator(driver, clock=clock, actor="ann", tenant="acme").audit()
    assert [(e.target, e.tenant, e.detail) for e in acme] == [("job-of-acme", "acme", {"n": 1})]
    assert len(await Operator(driver, clock=clock, actor="ann").audit()) == 3


async def test_the_maintenance_leader_deletes_entries_past_the_audit_retention_and_keeps_the_rest(
    driver: Driver, clock: FakeClock
) -> None:
    ops = Operator(driver, clock=clock, actor="ann")
    await ops.pause("old", create=True)
    clock.advance(3600)
    await ops.pause("new", create=True)
    clock.advance(1800)
    m = Maintenance(driver, clock, holder="m1", config=MaintenanceConfig(audit_retention=3600))
    res = await m.run_once()
    assert res.audit_pruned == 1
    assert [e.target for e in await ops.audit()] == ["new"]


async def test_a_bad_read_is_refused_with_its_fix_before_it_reads(driver: Driver, clock: FakeClock) -> None:
    ops = Operator(driver, clock=clock, actor="ann")
    for bad in (
        {"limit": 0},
        {"limit": 1001},
        {"limit": True},
        {"before": 0},
        {"action": "queue.pase"},
        {"since": clock.now().replace(tzinfo=None)},
        {"target": ""},
        {"actor": 7},
    ):
        with pytest.raises(JobsError) as err:
            await ops.audit(**bad)  # type: ignore[arg-type]
        assert err.value.code == X_INVALID_ARGUMENT and err.value.fix
    with pytest.raises(JobsError) as typo:
        await ops.audit(action="queue.pase")
    assert "did you mean 'queue.pause'" in str(typo.value.cause)
    assert typo.value.fix == "jobsctl audit --action queue.pause"


async def test_a_pause_whose_audit_entry_cannot_be_written_does_not_land(pg_dsn: str, clock: FakeClock) -> None:
    from engine.drivers.postgres import PostgresDriver

    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("alter table jobs.audit_log add constraint no_pauses check (action <> 'queue.pause')")
    driver = PostgresDriver(pg_dsn)
    await driver.open()
    try:
        ops = Operator(driver, clock=clock, actor="ann")
        with pytest.raises(psycopg.errors.CheckViolation):
            await ops.pause("billing", create=True)
        view = await driver.queue_pause(queue="billing", paused=False, actor="ann", note=None, now=clock.now())
        assert view.changed is False  # never paused: the pause rolled back with its entry
        assert await ops.audit() == []
    finally:
        await driver.close()
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("alter table jobs.audit_log drop constraint no_pauses")
