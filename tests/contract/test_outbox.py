"""The transactional outbox (I16-I20), run against every driver (memory and postgres).

An "app transaction" is a psycopg AsyncConnection inside ``conn.transaction()`` on PostgreSQL and
``driver.transaction()`` on the memory driver: the same test reads the same on both.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest

from engine.api import Engine, Enqueue
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.drivers.outbox_lease import DEFAULT_CLAIM_LEASE_MS, claim_lease_ms
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.jobs import job
from engine.outbox_types import OutboxRow
from engine.services.maintenance import LEADER, Maintenance, MaintenanceConfig
from engine.services.relay import Relay, RelayConfig
from engine.types import EnqueueResult, JobState, NewJob

LEASE_MS = 10_000


@job(name="send_receipt", queue="mail", idempotency_key=lambda inp: f"order:{inp['order']}")
async def send_receipt(ctx: Any, inp: Any) -> None:
    return None


@contextlib.asynccontextmanager
async def app_tx(driver: Driver) -> AsyncIterator[Any]:
    """The application's own transaction: committed on a clean exit, rolled back on an exception."""
    if driver.kind == "memory":
        async with driver.transaction() as tx:  # type: ignore[attr-defined]
            yield tx
        return
    async with await psycopg.AsyncConnection.connect(driver.dsn) as conn:  # type: ignore[attr-defined]
        async with conn.transaction():
            yield conn


@contextlib.asynccontextmanager
async def no_tx(driver: Driver) -> AsyncIterator[Any]:
    """A connection with no transaction open (autocommit); None on the memory driver."""
    if driver.kind == "memory":
        yield None
        return
    async with await psycopg.AsyncConnection.connect(driver.dsn, autocommit=True) as conn:  # type: ignore[attr-defined]
        yield conn


def engine(driver: Driver, clock: FakeClock, ids: IdFactory, **kw: Any) -> Engine:
    return Engine(driver, clock=clock, ids=ids, **kw)


async def stage_orders(eng: Engine, driver: Driver, orders: Sequence[int]) -> list[str]:
    async with app_tx(driver) as tx:
        staged = await eng.astage_many(tx, [Enqueue(send_receipt, {"order": n}) for n in orders])
    return [s.id for s in staged]


def relay(driver: Driver, clock: FakeClock, name: str, **kw: Any) -> Relay:
    cfg = RelayConfig(id=name, lease_ms=kw.pop("lease_ms", LEASE_MS), batch_size=kw.pop("batch_size", 250))
    return Relay(driver, clock, config=cfg, **kw)


async def rows(driver: Driver, ids: Sequence[str]) -> list[OutboxRow]:
    out = [await driver.outbox_get(id=i) for i in ids]
    assert all(r is not None for r in out)
    return out  # type: ignore[return-value]


# --- I16: the stage is the caller's transaction ---------------------------------------------------


async def test_i16_stage_is_seen_at_commit_and_a_rollback_leaves_no_trace(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    eng = engine(driver, clock, ids)
    with pytest.raises(RuntimeError):
        async with app_tx(driver) as tx:
            rolled = await eng.astage(tx, send_receipt, {"order": 1})
            raise RuntimeError("the app's transaction fails")
    assert await driver.outbox_get(id=rolled.id) is None
    async with app_tx(driver) as tx:
        kept = await eng.astage(tx, send_receipt, {"order": 2})
        assert kept.published is None
        r = relay(driver, clock, "r1")
        assert (await r.run_once()).claimed == 0  # not committed yet: no relay can see it
    res = await r.run_once()
    assert res.published == (kept.id,)
    (row,) = await rows(driver, [kept.id])
    job_row = await driver.job_get(job_id=row.job_id)  # type: ignore[arg-type]
    assert job_row is not None and job_row.name == "send_receipt" and job_row.input == {"order": 2}
    # The rolled-back stage was never published: one job only.
    assert job_row.idempotency_key == "order:2"


async def test_i16_a_refused_stage_writes_nothing_and_the_transaction_goes_on(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    eng = engine(driver, clock, ids)
    async with app_tx(driver) as tx:
        for bad, code in (
            (dict(job=lambda c, i: None, input={"order": 1}), "X_NOT_A_JOB"),
            (dict(job=send_receipt, input={"order": object()}), "X_INPUT_NOT_JSON"),
            (dict(job=send_receipt, input={"order": 1}, delay=-5), "X_INVALID_ARGUMENT"),
            (dict(job=send_receipt, input={"order": 1}, tenant=42), "X_INVALID_ARGUMENT"),
        ):
            with pytest.raises(JobsError) as err:
                await eng.astage(tx, **bad)  # type: ignore[arg-type]
            assert err.value.code == code
        ok = await eng.astage(tx, send_receipt, {"order": 7})
    assert (await rows(driver, [ok.id]))[0].idempotency_key == "order:7"
    stats = await driver.outbox_stats(now=clock.now(), count_cap=100, limit=10, alive_since=clock.now())
    assert stats.backlog == 1  # only the good stage


async def test_i16_outside_a_transaction_publishes_directly_unless_required(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    async with no_tx(driver) as conn:
        direct = await engine(driver, clock, ids).astage(conn, send_receipt, {"order": 3})
        assert direct.published is not None and not direct.published.deduped
        assert (await driver.job_get(job_id=direct.id)) is not None  # a job now, no outbox row
        assert await driver.outbox_get(id=direct.id) is None
        with pytest.raises(JobsError) as err:
            await engine(driver, clock, ids, outbox_mode="required").astage(conn, send_receipt, {"order": 4})
    assert err.value.code == "X_OUTBOX_NO_TX" and "required" in err.value.cause and err.value.fix


def test_i16_an_unknown_outbox_mode_is_refused() -> None:
    from engine.api import connect

    with pytest.raises(JobsError) as err:
        connect("memory://", outbox_mode="sometimes")
    assert err.value.code == "X_INVALID_ARGUMENT"


# --- I17: the claim is a lease, in (staged_at, id) order -------------------------------------------


async def test_i17_claim_is_one_leased_step_in_stage_order(driver: Driver, clock: FakeClock, ids: IdFactory) -> None:
    eng = engine(driver, clock, ids)
    staged = await stage_orders(eng, driver, [5, 4, 3, 2, 1])  # one transaction: one staged_at
    now = clock.now()
    a = await driver.outbox_claim(relay="A", token=ids.new(), limit=3, now=now, lease_ms=LEASE_MS)
    assert [r.id for r in a] == staged[:3]  # the id breaks the shared staged_at in stage order
    assert all(r.claimed_by == "A" and r.lease_until == now + timedelta(milliseconds=LEASE_MS) for r in a)
    b = await driver.outbox_claim(relay="B", token=ids.new(), limit=10, now=now, lease_ms=LEASE_MS)
    assert [r.id for r in b] == staged[3:]  # A's rows are held: never claimed twice inside the lease
    assert await driver.outbox_claim(relay="C", token=ids.new(), limit=10, now=now, lease_ms=LEASE_MS) == []
    clock.advance(LEASE_MS / 1000 + 0.001)  # A died: its rows are claimable again once the lease lapsed
    c = await driver.outbox_claim(relay="C", token=ids.new(), limit=10, now=clock.now(), lease_ms=LEASE_MS)
    assert [r.id for r in c] == staged  # B's lapsed too; all five, in order


# --- I18: every mutation of a claimed row is fenced on the claim's token ---------------------------


async def test_i18_a_lapsed_claim_can_neither_release_nor_retire_rows_another_claim_holds(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    eng = engine(driver, clock, ids)
    staged = await stage_orders(eng, driver, [1, 2])
    old, new = ids.new(), ids.new()
    await driver.outbox_claim(relay="A", token=old, limit=10, now=clock.now(), lease_ms=LEASE_MS)
    clock.advance(LEASE_MS / 1000 + 1)
    held = await driver.outbox_claim(relay="B", token=new, limit=10, now=clock.now(), lease_ms=LEASE_MS)
    assert [r.id for r in held] == staged
    fake_job = ids.new()
    # A wakes up: its release and its mark are no-ops; B still holds both rows.
    assert await driver.outbox_release(token=old, ids=staged, failed=staged[0], error="late", now=clock.now()) == []
    assert (
        await driver.outbox_mark_published(token=old, published=[(i, fake_job) for i in staged], now=clock.now()) == []
    )
    after = await rows(driver, staged)
    assert all(r.claim_token == new and r.published_at is None and r.attempts == 0 for r in after)
    # B retires them; a second mark (even B's own) is first-writer-wins: the stamp is not rewritten.
    marked_at = clock.now()
    assert (
        await driver.outbox_mark_published(token=new, published=[(i, fake_job) for i in staged], now=marked_at)
        == staged
    )
    clock.advance(5)
    assert (
        await driver.outbox_mark_published(token=new, published=[(i, ids.new()) for i in staged], now=clock.now()) == []
    )
    assert all(r.published_at == marked_at and r.job_id == fake_job for r in await rows(driver, staged))


async def test_i18_a_relay_stalled_past_its_lease_wakes_up_owning_nothing(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    eng = engine(driver, clock, ids)
    staged = await stage_orders(eng, driver, [1, 2, 3])
    resume, stalled = asyncio.Event(), asyncio.Event()

    async def stall(step: str, batch: Sequence[OutboxRow]) -> None:
        if step == "published":  # published, not yet retired: the window the fence closes
            stalled.set()
            await resume.wait()

    a = relay(driver, clock, "A", hook=stall)
    b_hold, b_go = asyncio.Event(), asyncio.Event()

    async def hold(step: str, batch: Sequence[OutboxRow]) -> None:
        if step == "claimed":
            b_hold.set()
            await b_go.wait()

    b = relay(driver, clock, "B", hook=hold)
    a_pass = asyncio.ensure_future(a.run_once())
    await stalled.wait()
    clock.advance(LEASE_MS / 1000 + 1)  # A's lease lapses while it is stalled
    b_pass = asyncio.ensure_future(b.run_once())
    await b_hold.wait()  # B now holds the three rows
    resume.set()
    res_a = await a_pass
    assert res_a.published == () and res_a.lapsed == tuple(staged)  # A retired nothing
    assert all(r.claimed_by == "B" and r.published_at is None for r in await rows(driver, staged))
    b_go.set()
    res_b = await b_pass
    # B re-publishes: the jobs A inserted are live, so each dedupes onto A's job: one job per row.
    assert res_b.published == tuple(staged) and res_b.deduped == 3
    job_ids = [r.job_id for r in await rows(driver, staged)]
    assert len(set(job_ids)) == 3
    for jid, n in zip(job_ids, [1, 2, 3]):
        j = await driver.job_get(job_id=jid)  # type: ignore[arg-type]
        assert j is not None and j.input == {"order": n} and j.state is JobState.READY


# --- I19: the lease, normalised in one place -------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -1, 1.5, math.inf, math.nan, True, "30000"])
def test_i19_a_lease_that_is_not_positive_whole_ms_is_refused_at_construction(bad: object) -> None:
    with pytest.raises(JobsError) as err:
        RelayConfig(lease_ms=bad)  # type: ignore[arg-type]
    assert err.value.code == "X_INVARIANT" and repr(bad) in err.value.cause


def test_i19_the_lease_default_and_whole_floats_are_normalised_once() -> None:
    assert RelayConfig().lease_ms == DEFAULT_CLAIM_LEASE_MS == claim_lease_ms(None)
    assert RelayConfig(lease_ms=2000.0).lease_ms == 2000 and isinstance(RelayConfig(lease_ms=2000.0).lease_ms, int)


async def test_i19_both_drivers_refuse_a_bad_lease_before_claiming(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    staged = await stage_orders(engine(driver, clock, ids), driver, [1])
    with pytest.raises(JobsError) as err:
        await driver.outbox_claim(relay="A", token=ids.new(), limit=1, now=clock.now(), lease_ms=0)
    assert err.value.code == "X_INVARIANT"
    assert (await rows(driver, staged))[0].claim_token is None


# --- I20: a failed publish stops the batch and hands the rest back at once -------------------------


async def test_i20_a_failed_publish_stops_the_batch_and_no_later_row_overtakes_it(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    eng = engine(driver, clock, ids)
    staged = await stage_orders(eng, driver, [1, 2, 3, 4, 5])
    broken = {"on": True}

    async def publish(jobs: Sequence[NewJob], now: datetime) -> list[EnqueueResult]:
        if broken["on"] and any(j.input == {"order": 3} for j in jobs):
            raise ConnectionError("the pool blipped")
        return await driver.job_enqueue(jobs=jobs, now=now)

    r = relay(driver, clock, "A", publish=publish)
    res = await r.run_once()
    assert res.published == tuple(staged[:2])
    assert res.failed == staged[2] and res.error == "ConnectionError: the pool blipped"
    assert res.released == tuple(staged[2:])
    third, fourth, fifth = await rows(driver, staged[2:])
    assert (third.attempts, third.last_error, third.failed_at) == (1, res.error, clock.now())
    assert fourth.attempts == 0 and fourth.claim_token is None and fifth.claim_token is None
    # Handed back at once: claimable by any relay now, not after the lease, failed row first.
    again = await relay(driver, clock, "B", publish=publish).run_once()
    assert again.failed == staged[2] and again.published == ()  # 4 and 5 never overtake 3
    assert (await rows(driver, [staged[2]]))[0].attempts == 2
    broken["on"] = False
    res = await r.run_once()
    assert res.published == tuple(staged[2:])
    done = await rows(driver, staged)
    published_jobs = [await driver.job_get(job_id=x.job_id) for x in done]  # type: ignore[arg-type]
    # Published in stage order: the jobs' ids (UUIDv7, minted at publish) rise with it.
    assert [j.input["order"] for j in sorted(published_jobs, key=lambda j: j.id)] == [1, 2, 3, 4, 5]  # type: ignore[union-attr]
    assert done[2].attempts == 2 and done[2].last_error == "ConnectionError: the pool blipped"  # kept as history


async def test_a_publish_error_holding_a_nul_or_a_lone_surrogate_is_recorded_escaped(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    staged = await stage_orders(engine(driver, clock, ids), driver, [1])

    async def publish(jobs: Sequence[NewJob], now: datetime) -> list[EnqueueResult]:
        raise ConnectionError("broker said \x00 about \udcff")

    res = await relay(driver, clock, "A", publish=publish).run_once()
    assert res.failed == staged[0] and res.error == "ConnectionError: broker said \\x00 about \\udcff"
    (row,) = await rows(driver, staged)
    assert (row.attempts, row.last_error) == (1, res.error)  # recorded, the row handed back


# --- the relay publishes through the enqueue path ------------------------------------------------


async def test_relay_publish_dedupes_a_live_job_on_its_idempotency_key(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    eng = engine(driver, clock, ids)
    live = await eng.aenqueue(send_receipt, {"order": 9})
    staged = await stage_orders(eng, driver, [9, 9])
    res = await relay(driver, clock, "A").run_once()
    assert res.published == tuple(staged) and res.deduped == 2
    assert [r.job_id for r in await rows(driver, staged)] == [live.id, live.id]


async def test_relay_keeps_delay_tenant_and_priority_of_the_stage(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    eng = engine(driver, clock, ids)
    async with app_tx(driver) as tx:
        s = await eng.astage(tx, send_receipt, {"order": 1}, tenant="acme", delay=60, priority=5)
    clock.advance(10)
    await relay(driver, clock, "A").run_once()
    (row,) = await rows(driver, [s.id])
    j = await driver.job_get(job_id=row.job_id)  # type: ignore[arg-type]
    assert j is not None and (j.tenant, j.priority, j.state) == ("acme", 5, JobState.DELAYED)
    assert j.run_at == row.staged_at + timedelta(seconds=60)  # due 60 s after the stage, not the publish


async def test_a_committed_stage_wakes_a_waiting_relay(driver: Driver, clock: FakeClock, ids: IdFactory) -> None:
    eng = engine(driver, clock, ids)
    assert not await driver.outbox_wait(timeout=0.05)  # nothing staged: the wait times out
    waiting = asyncio.ensure_future(driver.outbox_wait(timeout=10))
    await asyncio.sleep(0.05)  # the listener is subscribed before the stage commits
    await stage_orders(eng, driver, [1])
    assert await asyncio.wait_for(waiting, 5)


# --- the audit trail and the operator's reads ------------------------------------------------------


async def test_published_rows_are_kept_then_pruned_by_the_maintenance_leader(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    eng = engine(driver, clock, ids)
    staged = await stage_orders(eng, driver, [1, 2])
    await relay(driver, clock, "A").run_once()
    m = Maintenance(driver, clock, holder="m1", config=MaintenanceConfig(outbox_retention=3600))
    assert (await m.run_once()).outbox_pruned == 0  # kept as the audit trail
    assert all(r.published_at is not None for r in await rows(driver, staged))
    clock.advance(3601)
    assert (await m.run_once()).outbox_pruned == 2
    assert [await driver.outbox_get(id=i) for i in staged] == [None, None]
    # Fenced on the leader's term: a holder that does not lead prunes nothing.
    assert (
        await driver.outbox_prune(leader=LEADER, holder="x", term=99, now=clock.now(), before=clock.now(), limit=9) == 0
    )


async def test_outbox_stats_answer_backlog_holders_failing_and_relays(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    eng = engine(driver, clock, ids)
    first = await stage_orders(eng, driver, [1, 2, 3])
    clock.advance(30)
    await stage_orders(eng, driver, [4])
    token = ids.new()
    await driver.outbox_claim(relay="A", token=token, limit=2, now=clock.now(), lease_ms=LEASE_MS)
    await driver.outbox_release(token=token, ids=[first[1]], failed=first[1], error="X_BOOM: no", now=clock.now())
    await driver.outbox_relay_beat(relay="A", now=clock.now())
    now = clock.now()
    s = await driver.outbox_stats(now=now, count_cap=100, limit=10, alive_since=now - timedelta(seconds=15))
    assert (s.backlog, s.backlog_capped, s.published_last_hour) == (4, False, 0)
    assert s.oldest_staged_at == now - timedelta(seconds=30)
    assert [(h.relay, h.rows, h.lease_until) for h in s.holders] == [("A", 1, now + timedelta(milliseconds=LEASE_MS))]
    assert [(f.id, f.attempts, f.last_error) for f in s.failing] == [(first[1], 1, "X_BOOM: no")]
    assert [r.id for r in s.relays] == ["A"]
    capped = await driver.outbox_stats(now=now, count_cap=2, limit=10, alive_since=now)
    assert (capped.backlog, capped.backlog_capped, capped.relays) == (2, True, ())
    await driver.outbox_relay_gone(relay="A")
    gone = await driver.outbox_stats(now=now, count_cap=100, limit=10, alive_since=now - timedelta(seconds=15))
    assert gone.relays == ()


async def test_relay_counts_publishes_and_failures_and_gauges_the_backlog(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    from engine.runtime.metrics import Metrics

    eng = engine(driver, clock, ids)
    await stage_orders(eng, driver, [1, 2])
    clock.advance(12)
    await stage_orders(eng, driver, [3])
    m = Metrics()

    async def publish(jobs: Sequence[NewJob], now: datetime) -> list[EnqueueResult]:
        if any(j.input == {"order": 3} for j in jobs):
            raise ConnectionError("down")
        return await driver.job_enqueue(jobs=jobs, now=now)

    await relay(driver, clock, "A", metrics=m, publish=publish).run_once()
    value = m.registry.get_sample_value
    assert value("outbox_published_total") == 2 and value("outbox_publish_failed_total") == 1
    assert value("outbox_backlog") == 1 and value("outbox_oldest_unpublished_seconds") == 0.0


async def test_why_a_staged_row_is_not_published_names_relay_lease_or_error(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    from engine.introspect.base import EngineView
    from engine.introspect.outbox import outbox_view, outbox_why

    view = EngineView(driver, clock=clock)
    eng = engine(driver, clock, ids)
    (first, second) = await stage_orders(eng, driver, [1, 2])
    assert "no relay is alive" in (await outbox_why(view, first)).text
    await driver.outbox_relay_beat(relay="R", now=clock.now())
    assert (await outbox_why(view, first)).text.startswith("waiting for the next claim (relays alive: R)")
    token = ids.new()
    await driver.outbox_claim(relay="R", token=token, limit=1, now=clock.now(), lease_ms=LEASE_MS)
    held = await outbox_why(view, first)
    assert held.status == "held" and held.text.startswith("held by relay R until 2026-01-01 12:00:10")
    await driver.outbox_release(token=token, ids=[first], failed=first, error="X_DB: gone", now=clock.now())
    failing = await outbox_why(view, first)
    assert failing.status == "failing" and "failed 1 time(s)" in failing.text and "X_DB: gone" in failing.text
    await driver.outbox_claim(relay="R", token=ids.new(), limit=2, now=clock.now(), lease_ms=LEASE_MS)
    clock.advance(60)  # R stopped beating and its lease lapsed
    lapsed = await outbox_why(view, second)
    assert lapsed.status == "lapsed" and "its lease lapsed" in lapsed.text and "no relay is alive" in lapsed.text
    v = await outbox_view(view)
    assert (v.backlog, v.oldest_unpublished_age, v.relays, v.holders) == (2, 60.0, (), ())
    with pytest.raises(JobsError) as err:
        await outbox_why(view, ids.new())
    assert err.value.code == "X_NOT_FOUND"
