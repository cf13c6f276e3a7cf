"""The core queue's behaviour, run against every driver (memory and postgres)."""

from __future__ import annotations

import inspect
import re
from datetime import datetime, timedelta
from typing import Any

import pytest

from engine.clock import FakeClock
from engine.drivers.base import AREAS, Driver, Lifecycle
from engine.drivers.dedupe import dedupe_key
from engine.drivers.memory import MemoryDriver
from engine.drivers.migrations import schema_sql
from engine.drivers.postgres import PostgresDriver
from engine.drivers.sqlfiles import load_queries, sql_dir
from engine.ids import IdFactory
from engine.testing import make_job
from engine.types import Ack, Claim, JobState, Nack, NewJob

LEASE = 30.0


def new(ids: IdFactory, *, name: str = "send_email", key: str = "user:7", tenant: str | None = None, **kw) -> NewJob:  # type: ignore[no-untyped-def]
    return NewJob(
        id=ids.new(),
        name=name,
        queue=kw.pop("queue", "default"),
        idempotency_key=key,
        input=kw.pop("input", {"user_id": 7}),
        max_attempts=kw.pop("max_attempts", 3),
        tenant=tenant,
        **kw,
    )


def _members(proto: type) -> dict[str, Any]:
    return {
        n: m
        for n, m in inspect.getmembers(proto)
        if not n.startswith("_") and (inspect.isfunction(m) or inspect.iscoroutinefunction(m))
    }


def _defined_in(cls: type, name: str) -> type | None:
    """The class of ``cls``'s MRO that defines ``name``: never a protocol's stub."""
    return next((k for k in cls.__mro__ if name in vars(k) and not getattr(k, "_is_protocol", False)), None)


def test_protocol_members_are_implemented_by_every_driver() -> None:
    members = _members(Driver)
    assert "worker_claim" in members and "describe" in members and len(members) >= 10
    for cls in (MemoryDriver, PostgresDriver):
        for name, proto in members.items():
            impl = getattr(cls, name, None)
            assert impl is not None and _defined_in(cls, name) is not None, f"{cls.__name__} lacks {name}"
            assert inspect.iscoroutinefunction(impl) == inspect.iscoroutinefunction(proto), (
                f"{cls.__name__}.{name} async-ness differs"
            )
            want = [p for p in inspect.signature(proto).parameters if p != "self"]
            got = [p for p in inspect.signature(impl).parameters if p != "self"]
            assert got == want, f"{cls.__name__}.{name}{got} != Driver.{name}{want}"


def test_each_area_is_implemented_in_its_own_module_by_every_driver() -> None:
    """An area's protocol, its two halves and its statements share one name (base.py, AREAS),
    and each member is defined by one class only: no behaviour depends on the order of bases."""
    seen: set[str] = set()
    for area, proto in AREAS.items():
        names = set(_members(proto))
        assert names and not names & seen, f"{area}: no members, or members of another area"
        seen |= names
        assert (sql_dir() / "queries" / f"{area}.sql").is_file(), f"sql/queries/{area}.sql is missing"
        for cls in (MemoryDriver, PostgresDriver):
            for name in names:
                home = _defined_in(cls, name)
                assert home is not None and home.__module__ == f"{cls.__module__}.{area}", (
                    f"{cls.__name__}.{name} lives in {home and home.__module__}, not in the {area} area's module"
                )
                defining = [k.__name__ for k in cls.__mro__ if name in vars(k) and not getattr(k, "_is_protocol", 0)]
                assert len(defining) == 1, f"{cls.__name__}.{name} is defined by {defining}: one wraps another"
    assert seen | set(_members(Lifecycle)) == set(_members(Driver)), "a Driver member belongs to no area"


# --- I2: the dedupe namespace ---------------------------------------------------------------------


async def test_i2_dedupe_namespace_is_name_tenant_key(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    now = clock.now()
    welcome = new(ids, name="send_welcome_email", key="user:7")
    provision = new(ids, name="provision_workspace", key="user:7")
    acme = new(ids, name="send_invoice", key="invoice:42", tenant="acme")
    globex = new(ids, name="send_invoice", key="invoice:42", tenant="globex")
    r = await driver.job_enqueue(jobs=[welcome, provision, acme, globex], now=now)
    # Two job names deriving one natural key, and two tenants sharing one: four jobs, none deduped.
    assert [x.deduped for x in r] == [False, False, False, False]
    assert [x.id for x in r] == [welcome.id, provision.id, acme.id, globex.id]

    again = await driver.job_enqueue(jobs=[new(ids, name="send_invoice", key="invoice:42", tenant="globex")], now=now)
    # A deduped answer is the same tenant's, same name's live row: never another tenant's id.
    assert again[0].deduped and again[0].id == globex.id

    # Tenantless jobs share one namespace ('' for every null tenant), so their dedupe still works.
    t1 = await driver.job_enqueue(jobs=[new(ids, name="rollup", key="day:1")], now=now)
    t2 = await driver.job_enqueue(jobs=[new(ids, name="rollup", key="day:1")], now=now)
    assert not t1[0].deduped and t2[0].deduped and t2[0].id == t1[0].id


def test_i2_index_conflict_target_and_live_lookup_spell_one_namespace() -> None:
    """The three places that must agree, pinned together: the unique index, the insert's
    conflict target (which must spell the index expression exactly), and the live-row lookups.
    The memory driver's key is the same expression."""
    norm = lambda s: re.sub(r"\s+", " ", s).strip().lower()  # noqa: E731
    schema = norm(schema_sql())
    # The last definition is the installed one (0011 gave the key text_pattern_ops: the same
    # equality, and ON CONFLICT names no operator class).
    defined = re.findall(
        r"create unique index job_dedupe_live_v3 on jobs.job \((.*?)\) where state in \((.*?)\);", schema
    )
    assert defined
    spelled, live_states = defined[-1]
    assert spelled == "name, (coalesce(tenant, '')), idempotency_key text_pattern_ops"
    expression = spelled.removesuffix(" text_pattern_ops")
    enqueue = norm(load_queries()["job_enqueue"].text)
    assert f"on conflict ({expression}) where state in ({live_states}) do nothing" in enqueue
    # The fallback lookups read the same namespace over the same states.
    assert "coalesce(j.tenant, '') = coalesce(i.tenant, '')" in enqueue and f"j.state in ({live_states})" in enqueue
    live = norm(load_queries()["job_find_live"].text)
    assert "coalesce(tenant, '') = coalesce(%(tenant)s::text, '')" in live and f"state in ({live_states})" in live
    assert live_states == "'ready','delayed','running','suspended','parked'"
    assert dedupe_key("a", None, "k") == dedupe_key("a", "", "k") != dedupe_key("a", "t", "k")


async def test_i2_dedupe_is_over_live_states_only(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    row = await make_job(driver, ids, clock.now(), state=JobState.COMPLETED, key="order:1")
    r = await driver.job_enqueue(jobs=[new(ids, key="order:1")], now=clock.now())
    assert not r[0].deduped and r[0].id != row.id
    for state in (JobState.PARKED, JobState.SUSPENDED, JobState.RUNNING):
        live = await make_job(driver, ids, clock.now(), state=state, key=f"live:{state}", queue=f"q-{state}")
        d = await driver.job_enqueue(jobs=[new(ids, key=f"live:{state}", queue=f"q-{state}")], now=clock.now())
        assert d[0].deduped and d[0].id == live.id, state


async def test_a_batch_with_one_key_twice_inserts_once(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    a, b = new(ids, key="same"), new(ids, key="same")
    r = await driver.job_enqueue(jobs=[a, b], now=clock.now())
    assert (r[0].id, r[0].deduped) == (a.id, False)
    assert (r[1].id, r[1].deduped) == (a.id, True)


async def test_a_batch_takes_run_at_as_a_datetime_subclass(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    # freezegun's FakeDatetime and pendulum's DateTime are datetime subclasses: the batch's
    # encoder (orjson) writes plain datetimes only, so a subclass must reach the row all the same.
    class Later(datetime):
        pass

    at = clock.now() + timedelta(seconds=30)
    when = Later(at.year, at.month, at.day, at.hour, at.minute, at.second, at.microsecond, tzinfo=at.tzinfo)
    r = await driver.job_enqueue(jobs=[new(ids, key="a", run_at=when), new(ids, key="b")], now=clock.now())
    assert [x.state for x in r] == [JobState.DELAYED, JobState.READY]
    row = await driver.job_get(job_id=r[0].id)
    assert row is not None and row.run_at == at and row.state is JobState.DELAYED


# --- claims and leases ----------------------------------------------------------------------------


async def test_claim_order_is_priority_then_due_time_then_id(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    now = clock.now()
    late = new(ids, key="late", run_at=now - timedelta(seconds=1))
    early = new(ids, key="early", run_at=now - timedelta(seconds=10))
    urgent = new(ids, key="urgent", priority=5)
    future = new(ids, key="future", run_at=now + timedelta(minutes=5))
    other = new(ids, key="other", queue="other")
    await driver.job_enqueue(jobs=[late, early, urgent, future, other], now=now)
    got = (await driver.worker_claim(queues=["default"], limit=10, worker="w1", now=now, lease_seconds=LEASE)).jobs
    assert [c.row.id for c in got] == [urgent.id, early.id, late.id]
    assert all(c.row.state is JobState.RUNNING and c.row.claimed_by == "w1" and c.row.attempt == 1 for c in got)
    assert all(c.row.lease_until == now + timedelta(seconds=LEASE) for c in got)
    # The delayed one becomes claimable at its time, without anything else happening.
    assert (
        await driver.worker_claim(queues=["default"], limit=10, worker="w1", now=now, lease_seconds=LEASE)
    ).jobs == []
    later = now + timedelta(minutes=5)
    (f,) = (await driver.worker_claim(queues=["default"], limit=10, worker="w1", now=later, lease_seconds=LEASE)).jobs
    assert f.row.id == future.id


async def test_claim_respects_limit_and_never_hands_one_row_twice(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    await driver.job_enqueue(jobs=[new(ids, key=f"k{i}") for i in range(5)], now=clock.now())
    a = (await driver.worker_claim(queues=["default"], limit=3, worker="w1", now=clock.now(), lease_seconds=LEASE)).jobs
    b = (await driver.worker_claim(queues=["default"], limit=3, worker="w2", now=clock.now(), lease_seconds=LEASE)).jobs
    assert len(a) == 3 and len(b) == 2
    assert not {c.row.id for c in a} & {c.row.id for c in b}


async def test_i15_a_stale_claimant_can_neither_ack_nor_nack(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    now = clock.now()
    row = await make_job(driver, ids, now, state=JobState.RUNNING)
    real = Claim(row.id, row.claimed_by or "", row.run)
    wrong_worker = Claim(row.id, "w-other", row.run)
    stale_run = Claim(row.id, real.worker, row.run - 1)
    assert await driver.job_ack_many(acks=[Ack(wrong_worker, 1), Ack(stale_run, 1)], now=now) == []
    assert not await driver.job_nack(nack=Nack(wrong_worker, "retry", error="x"), now=now)
    assert not await driver.job_nack(nack=Nack(stale_run, "dead", error="x", stop_reason="terminal"), now=now)
    assert (await driver.job_get(job_id=row.id)).state is JobState.RUNNING  # type: ignore[union-attr]
    # Released and re-claimed: the first claim's token no longer speaks for the row.
    assert await driver.job_nack(nack=Nack(real, "release"), now=now)
    (again,) = (
        await driver.worker_claim(queues=["default"], limit=1, worker=real.worker, now=now, lease_seconds=LEASE)
    ).jobs
    assert again.row.run == real.run + 1
    assert await driver.job_ack_many(acks=[Ack(real, 1)], now=now) == []
    assert await driver.job_ack_many(acks=[Ack(again.claim, {"done": 1})], now=now) == [row.id]
    assert await driver.job_ack_many(acks=[Ack(again.claim, {"done": 2})], now=now) == []
    done = await driver.job_get(job_id=row.id)
    assert done is not None and done.state is JobState.COMPLETED and done.result == {"done": 1}


async def test_renewal_extends_the_lease_and_reports_loss_and_cancel(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    row = await make_job(driver, ids, clock.now(), state=JobState.RUNNING)
    c = Claim(row.id, row.claimed_by or "", row.run)
    clock.advance(10)
    (r,) = await driver.job_renew_many(claims=[c], now=clock.now(), lease_seconds=LEASE)
    assert r.status == "ok" and r.lease_until == clock.now() + timedelta(seconds=LEASE)
    (lost,) = await driver.job_renew_many(
        claims=[Claim(row.id, "w-other", row.run)], now=clock.now(), lease_seconds=LEASE
    )
    assert lost.status == "lost"
    await driver.job_cancel(job_id=row.id, tenant=None, now=clock.now(), actor="ops")
    (cancelled,) = await driver.job_renew_many(claims=[c], now=clock.now(), lease_seconds=LEASE)
    assert cancelled.status == "cancelled"


# --- settling ---------------------------------------------------------------------------------------


async def test_ack_records_the_attempt(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    row = await make_job(driver, ids, clock.now(), state=JobState.RUNNING)
    clock.advance(2)
    c = Claim(row.id, row.claimed_by or "", row.run)
    assert await driver.job_ack_many(acks=[Ack(c, {"sent": True})], now=clock.now()) == [row.id]
    (a,) = await driver.job_attempts(job_id=row.id)
    assert (a.run, a.attempt, a.worker, a.outcome) == (row.run, 1, c.worker, "completed")
    assert a.finished_at - a.started_at == timedelta(seconds=2)


async def test_retry_burns_an_attempt_and_records_the_error(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    row = await make_job(driver, ids, clock.now(), state=JobState.RUNNING)
    c = Claim(row.id, row.claimed_by or "", row.run)
    when = clock.now() + timedelta(seconds=4)
    assert await driver.job_nack(
        nack=Nack(c, "retry", run_at=when, error="X_GATEWAY: 502", error_code="X_GATEWAY"), now=clock.now()
    )
    got = await driver.job_get(job_id=row.id)
    assert got is not None
    assert (got.state, got.attempt, got.run_at, got.last_error, got.error_code) == (
        JobState.DELAYED,
        1,
        when,
        "X_GATEWAY: 502",
        "X_GATEWAY",
    )
    (a,) = await driver.job_attempts(job_id=row.id)
    assert (a.outcome, a.error_code) == ("retried", "X_GATEWAY")


async def test_dead_letter_keeps_its_stop_reason(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    row = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, max_attempts=5)
    c = Claim(row.id, row.claimed_by or "", row.run)
    text = "X_AUTH: rotated password [stop: terminal at attempt 1 of 5]"
    assert await driver.job_nack(
        nack=Nack(c, "dead", error=text, error_code="X_AUTH", stop_reason="terminal"), now=clock.now()
    )
    got = await driver.job_get(job_id=row.id)
    assert got is not None
    assert (got.state, got.stop_reason, got.attempt, got.max_attempts, got.last_error) == (
        JobState.DEAD,
        "terminal",
        1,
        5,
        text,
    )
    assert got.finished_at == clock.now()


async def test_i8_a_shed_is_parked_burns_no_attempt_and_writes_no_error(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    row = await make_job(driver, ids, clock.now(), state=JobState.RUNNING)
    c = Claim(row.id, row.claimed_by or "", row.run)
    until = clock.now() + timedelta(seconds=3)
    assert await driver.job_nack(
        nack=Nack(c, "park", run_at=until, wait={"kind": "limit", "limit": "concurrency"}), now=clock.now()
    )
    got = await driver.job_get(job_id=row.id)
    assert got is not None
    assert (got.state, got.attempt, got.last_error, got.run_at) == (JobState.PARKED, 0, None, until)
    assert got.wait == {"kind": "limit", "limit": "concurrency"}
    # A parked job is waiting, not failed: it is claimed again when its time comes.
    clock.advance(3)
    (again,) = (
        await driver.worker_claim(queues=["default"], limit=1, worker="w2", now=clock.now(), lease_seconds=LEASE)
    ).jobs
    assert again.row.id == row.id and again.row.attempt == 1


async def test_i7_a_suspension_burns_no_attempt(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    row = await make_job(driver, ids, clock.now(), state=JobState.SUSPENDED)
    assert (row.state, row.attempt, row.last_error) == (JobState.SUSPENDED, 0, None)
    assert (
        await driver.worker_claim(queues=["default"], limit=1, worker="w", now=clock.now(), lease_seconds=LEASE)
    ).jobs == []
    clock.advance(3 * 86400)
    (woken,) = (
        await driver.worker_claim(queues=["default"], limit=1, worker="w", now=clock.now(), lease_seconds=LEASE)
    ).jobs
    assert woken.row.id == row.id and woken.row.attempt == 1


# --- cancel -----------------------------------------------------------------------------------------


async def test_i25_cancel_refuses_another_tenants_job(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    row = await make_job(driver, ids, clock.now(), tenant="acme")
    assert await driver.job_cancel(job_id=row.id, tenant="globex", now=clock.now(), actor="ops") is None
    assert (await driver.job_get(job_id=row.id)).state is JobState.READY  # type: ignore[union-attr]
    res = await driver.job_cancel(job_id=row.id, tenant="acme", now=clock.now(), actor="ops", note="INC-1")
    assert res is not None and res.cancelled and res.previous is JobState.READY
    (h,) = await driver.job_history(job_id=row.id)
    assert (h.kind, h.actor, h.note, h.data) == ("cancelled", "ops", "INC-1", {"from": "ready"})


async def test_cancel_without_tenant_and_of_a_final_job(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    for state in (JobState.DELAYED, JobState.PARKED, JobState.SUSPENDED, JobState.RUNNING):
        row = await make_job(driver, ids, clock.now(), state=state, queue=f"q-{state}")
        res = await driver.job_cancel(job_id=row.id, tenant=None, now=clock.now(), actor="ops")
        assert res is not None and res.cancelled and res.previous is state
        assert res.was_running == (state is JobState.RUNNING)
    done = await make_job(driver, ids, clock.now(), state=JobState.COMPLETED, queue="q-done")
    res = await driver.job_cancel(job_id=done.id, tenant=None, now=clock.now(), actor="ops")
    assert res is not None and not res.cancelled and res.previous is JobState.COMPLETED
    assert (await driver.job_get(job_id=done.id)).state is JobState.COMPLETED  # type: ignore[union-attr]
    assert await driver.job_cancel(job_id=ids.new(), tenant=None, now=clock.now(), actor="ops") is None


@pytest.mark.parametrize("state", [JobState.COMPLETED, JobState.DEAD, JobState.CANCELLED])
async def test_final_jobs_are_never_claimed(driver: Driver, ids: IdFactory, clock: FakeClock, state: JobState) -> None:
    await make_job(driver, ids, clock.now(), state=state)
    clock.advance(86400)
    assert (
        await driver.worker_claim(queues=["default"], limit=10, worker="w", now=clock.now(), lease_seconds=LEASE)
    ).jobs == []
