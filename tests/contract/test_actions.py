"""The operator actions, the same from every driver: fenced on state, tenant-aware (I25), audited."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engine.actions import Operator
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.introspect import Introspector, parse_filter
from engine.projections import BulkGroup
from engine.testing import claim_of as _claim_of
from engine.testing import make_job
from engine.types import JobState, StoredStep


def op(driver: Driver, clock: FakeClock, **kw) -> Operator:  # type: ignore[no-untyped-def]
    return Operator(driver, clock=clock, actor=kw.pop("actor", "alice"), **kw)


async def test_retry_of_a_dead_job_resets_it_and_is_audited(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD, max_attempts=5)
    clock.advance(10)
    res = await op(driver, clock).retry(dead.id, note="INC-7 smtp fixed")
    assert (res.changed, res.previous, res.state) == (True, JobState.DEAD, JobState.READY)
    row = await driver.job_get(job_id=dead.id)
    assert row is not None and row.state is JobState.READY and row.attempt == 0 and row.run_at == clock.now()
    assert row.stop_reason is None and row.finished_at is None
    detail = await Introspector(driver, clock=clock).job(dead.id)
    (h,) = detail.history
    assert (h.kind, h.actor, h.note, h.at) == ("retried", "alice", "INC-7 smtp fixed", clock.now())


async def test_retry_of_a_job_that_is_not_dead_is_refused_and_changes_nothing(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    for st in (JobState.READY, JobState.RUNNING, JobState.COMPLETED, JobState.CANCELLED):
        job = await make_job(driver, ids, clock.now(), state=st)
        before = await driver.job_history(job_id=job.id)
        with pytest.raises(JobsError) as e:
            await op(driver, clock).retry(job.id)
        assert e.value.code == "X_INVALID_STATE" and st.value in e.value.cause
        assert await driver.job_get(job_id=job.id) == job
        assert await driver.job_history(job_id=job.id) == before


async def test_retry_with_a_live_duplicate_holding_the_key_is_refused_with_x_key_held(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD, key="user:7")
    live = await make_job(driver, ids, clock.now(), key="user:7")
    with pytest.raises(JobsError) as e:
        await op(driver, clock).retry(dead.id)
    assert e.value.code == "X_KEY_HELD" and live.id in e.value.cause and e.value.fix == f"jobsctl why {live.id}"
    assert (await driver.job_get(job_id=dead.id)) == dead
    assert await driver.job_history(job_id=dead.id) == []


async def test_i25_id_addressed_actions_refuse_another_tenants_job(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD, tenant="acme")
    ready = await make_job(driver, ids, clock.now(), tenant="acme")
    for action in (lambda o: o.retry(dead.id, tenant="globex"), lambda o: o.cancel(ready.id, tenant="globex")):
        with pytest.raises(JobsError) as e:
            await action(op(driver, clock))
        assert e.value.code == "X_NOT_FOUND" and "globex" in e.value.cause
    # An operator scoped to a tenant is held to it, whatever it is asked.
    scoped = op(driver, clock, tenant="globex")
    with pytest.raises(JobsError) as e:
        await scoped.cancel(ready.id)
    assert e.value.code == "X_NOT_FOUND"
    with pytest.raises(JobsError) as e:
        await scoped.cancel(ready.id, tenant="acme")
    assert e.value.code == "X_TENANT_MISMATCH"
    with pytest.raises(JobsError) as e:
        await scoped.plan("cancel", parse_filter("tenant=acme"))
    assert e.value.code == "X_TENANT_MISMATCH"
    assert (await scoped.bulk("cancel")).changed == 0
    assert (await driver.job_get(job_id=ready.id)) == ready and (await driver.job_get(job_id=dead.id)) == dead
    assert (await op(driver, clock).cancel(ready.id, tenant="acme")).changed


async def test_i25_read_only_operator_refuses_every_mutation(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    ro = op(driver, clock, read_only=True)
    calls = [
        lambda: ro.retry(dead.id),
        lambda: ro.retry_from_step(dead.id, "s"),
        lambda: ro.cancel(dead.id),
        lambda: ro.bulk("retry"),
        lambda: ro.bulk("cancel"),
        lambda: ro.pause("default"),
        lambda: ro.resume("default"),
        lambda: ro.send_event("e", {}),
    ]
    for call in calls:
        with pytest.raises(JobsError) as e:
            await call()
        assert e.value.code == "X_READ_ONLY"
    assert (await ro.plan("retry")).matched == 1  # the dry run is a read
    assert await driver.job_get(job_id=dead.id) == dead


async def test_cancel_each_live_state_and_a_finished_job_is_a_clear_no_op(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    for st in (JobState.READY, JobState.DELAYED, JobState.SUSPENDED, JobState.PARKED, JobState.RUNNING):
        job = await make_job(driver, ids, clock.now(), state=st, queue=f"q-{st.value}")
        res = await op(driver, clock).cancel(job.id, note="wrong input")
        assert (res.changed, res.previous, res.state) == (True, st, JobState.CANCELLED)
        (h,) = await driver.job_history(job_id=job.id)
        assert (h.kind, h.actor, h.note) == ("cancelled", "alice", "wrong input")
    done = await make_job(driver, ids, clock.now(), state=JobState.COMPLETED)
    res = await op(driver, clock).cancel(done.id)
    assert not res.changed and res.state is JobState.COMPLETED and "completed" in (res.reason or "")
    assert await driver.job_get(job_id=done.id) == done and await driver.job_history(job_id=done.id) == []


async def test_bad_ids_are_clear_errors(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    for call in (lambda o: o.retry("42"), lambda o: o.cancel("nope")):
        with pytest.raises(JobsError) as e:
            await call(op(driver, clock))
        assert e.value.code == "X_MALFORMED_ID"
    with pytest.raises(JobsError) as e:
        await op(driver, clock).cancel(ids.new())
    assert e.value.code == "X_NOT_FOUND"


async def test_bulk_retry_dry_run_groups_and_counts_what_would_dedupe(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    for tenant in ("acme", "acme", "globex"):
        await make_job(driver, ids, clock.now(), state=JobState.DEAD, tenant=tenant, name="charge")
    held = await make_job(driver, ids, clock.now(), state=JobState.DEAD, name="charge", key="k:held")
    await make_job(driver, ids, clock.now(), name="charge", key="k:held")  # the live holder
    twin1 = await make_job(driver, ids, clock.now(), state=JobState.DEAD, name="charge", key="k:twin")
    await make_job(driver, ids, clock.now(), state=JobState.DEAD, name="charge", key="k:twin")
    await make_job(driver, ids, clock.now(), state=JobState.DEAD, name="mail")
    o = op(driver, clock)
    plan = await o.plan("retry", parse_filter("name=charge"))
    assert plan.matched == 6 and plan.deduped == 2 and plan.would_change == 4
    assert set(plan.groups) == {
        BulkGroup("terminal", "X_BOOM", "acme", 2),
        BulkGroup("terminal", "X_BOOM", "globex", 1),
        BulkGroup("terminal", "X_BOOM", None, 3),
    }
    # The dry run changed nothing.
    assert (await o.plan("retry", parse_filter("name=charge"))).matched == 6
    res = await o.bulk("retry", parse_filter("name=charge"), note="INC-9", batch_size=2)
    assert (res.changed, res.skipped) == (4, 2)
    left = await Introspector(driver, clock=clock).jobs(parse_filter("state=dead"))
    assert sorted(j.name for j in left.items) == ["charge", "charge", "mail"]
    # The held key stays dead; of the twins the newest went live and the other deduped away.
    assert held.id in {j.id for j in left.items} and twin1.id in {j.id for j in left.items}
    hist = [
        h
        for j in (await Introspector(driver, clock=clock).jobs(parse_filter("name=charge state=ready"))).items
        for h in await driver.job_history(job_id=j.id)
    ]
    assert {(h.kind, h.actor, h.note) for h in hist} == {("retried", "alice", "INC-9")}
    assert all(h.data.get("bulk") == "name=charge" for h in hist)


async def test_bulk_cancel_takes_every_live_match_and_refuses_a_final_state_filter(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    for st in (
        JobState.READY,
        JobState.DELAYED,
        JobState.SUSPENDED,
        JobState.RUNNING,
        JobState.COMPLETED,
        JobState.DEAD,
    ):
        await make_job(driver, ids, clock.now(), state=st, queue="imports", tenant="acme")
    await make_job(driver, ids, clock.now(), queue="other")
    o = op(driver, clock)
    plan = await o.plan("cancel", parse_filter("queue=imports"))
    assert plan.matched == 4 and plan.deduped == 0
    res = await o.bulk("cancel", parse_filter("queue=imports"))
    assert res.changed == 4
    (q_other,) = [q for q in (await Introspector(driver, clock=clock).queues()).queues if q.name == "other"]
    assert q_other.ready.value == 1
    with pytest.raises(JobsError) as e:
        await o.bulk("cancel", parse_filter("state=completed"))
    assert e.value.code == "X_INVALID_STATE"
    with pytest.raises(JobsError) as e:
        await o.plan("retry", parse_filter("state=ready"))
    assert e.value.code == "X_INVALID_STATE"


async def test_bulk_pacing_spreads_batches_over_the_clock(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    import asyncio

    for _ in range(5):
        await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    task = asyncio.create_task(op(driver, clock).bulk("retry", per_second=2))
    # 2 a second: batches of 2, a 1 s pause after each full batch.
    while clock.sleepers == 0:
        await asyncio.sleep(0)
    assert len((await Introspector(driver, clock=clock).jobs(parse_filter("state=ready"))).items) == 2
    clock.advance(1)
    while clock.sleepers == 0 and not task.done():
        await asyncio.sleep(0)
    assert len((await Introspector(driver, clock=clock).jobs(parse_filter("state=ready"))).items) == 4
    clock.advance(1)
    res = await task
    assert res.changed == 5 and res.per_second == 2
    for rate in (0, "5", float("inf")):
        with pytest.raises(JobsError) as e:
            await op(driver, clock).bulk("retry", per_second=rate)  # type: ignore[arg-type]
        assert e.value.code == "X_INVALID_ARGUMENT"


async def test_a_bulks_progress_is_told_each_batch_and_its_stop_ends_it_between_batches(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    import asyncio

    for _ in range(7):
        await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    seen: list[tuple[int, int]] = []
    stop = asyncio.Event()
    task = asyncio.create_task(
        op(driver, clock).bulk("retry", per_second=2, progress=lambda r: seen.append((r.changed, r.skipped)), stop=stop)
    )
    while clock.sleepers == 0:  # the first batch of 2 landed; its pace is running
        await asyncio.sleep(0)
    clock.advance(1)
    while len(seen) < 2 or clock.sleepers == 0:
        await asyncio.sleep(0)
    stop.set()  # during the pace after the second batch: no third batch runs, whatever the clock does
    res = await task
    assert seen == [(2, 0), (4, 0)]
    assert (res.changed, res.stopped) == (4, True)
    dead = await Introspector(driver, clock=clock).jobs(parse_filter("state=dead"))
    assert len(dead.items) == 3  # the rest unchanged
    # Not stopped: it runs out of jobs, its last progress its answer's totals.
    seen.clear()
    res = await op(driver, clock).bulk("retry", progress=lambda r: seen.append((r.changed, r.skipped)))
    assert (res.changed, res.stopped, seen) == (3, False, [(3, 0)])


async def test_a_bulks_stop_and_progress_that_could_not_work_are_refused_before_anything_changes(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    import threading

    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD)

    async def told(r: object) -> None:  # awaited by no one: its totals would go nowhere
        pass

    for kw in ({"stop": threading.Event()}, {"progress": told}, {"progress": "print"}):
        with pytest.raises(JobsError) as e:
            await op(driver, clock).bulk("retry", **kw)  # type: ignore[arg-type]
        assert e.value.code == "X_INVALID_ARGUMENT" and e.value.fix
    with pytest.raises(JobsError) as e:
        async for _ in op(driver, clock).retry_all_with_children(stop=threading.Event()):  # type: ignore[arg-type]
            pass
    assert e.value.code == "X_INVALID_ARGUMENT"
    row = await driver.job_get(job_id=dead.id)
    assert row is not None and row.state is JobState.DEAD


async def test_a_bulk_batch_past_one_transactions_bound_is_refused_before_anything_changes(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    for size in (0, 5_001, True, 2.5):
        with pytest.raises(JobsError) as e:
            await op(driver, clock).bulk("retry", batch_size=size)  # type: ignore[arg-type]
        assert e.value.code == "X_INVALID_ARGUMENT" and "from 1 to 5,000" in e.value.cause
    assert (await driver.job_get(job_id=dead.id)).state is JobState.DEAD  # type: ignore[union-attr]
    assert (await op(driver, clock).bulk("retry", batch_size=5_000)).changed == 1


async def test_pause_is_durable_visible_and_skipped_by_the_claim(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    await make_job(driver, ids, clock.now(), queue="emails")
    o = op(driver, clock)
    p = await o.pause("emails", note="smtp down")
    assert (p.paused, p.by, p.note, p.changed) == (True, "alice", "smtp down", True)
    assert not (await o.pause("emails")).changed  # already paused: a clear no-op
    (q,) = (await Introspector(driver, clock=clock).queues()).queues
    assert (q.paused, q.paused_by, q.paused_at, q.pause_note) == (True, "alice", clock.now(), "smtp down")
    assert (
        await driver.worker_claim(queues=["emails"], limit=10, worker="w", now=clock.now(), lease_seconds=30)
    ).jobs == []
    r = await o.resume("emails")
    assert (r.paused, r.changed) == (False, True)
    assert not (await o.resume("emails")).changed and not (await o.resume("never-paused")).changed
    assert (
        len(
            (await driver.worker_claim(queues=["emails"], limit=10, worker="w", now=clock.now(), lease_seconds=30)).jobs
        )
        == 1
    )


async def test_send_event_wakes_the_matching_wait(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    from engine.types import Nack

    row = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, tenant="acme")
    wait = {"kind": "event", "event": "invoice.paid", "match": {"invoice": 42}}
    await driver.job_nack(
        nack=Nack(_claim_of(row), "suspend", run_at=clock.now() + timedelta(hours=1), wait=wait), now=clock.now()
    )
    clock.advance(1)
    sent = await op(driver, clock).send_event("invoice.paid", {"invoice": 42}, tenant="acme")
    assert sent.woken == 1 and sent.name == "invoice.paid"
    assert (await driver.job_get(job_id=row.id)).run_at == clock.now()  # type: ignore[union-attr]
    with pytest.raises(JobsError) as e:
        await op(driver, clock).send_event("x", [1, 2])
    assert e.value.code == "X_INVALID_ARGUMENT"


async def test_retry_from_a_step_delegates_and_is_audited(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    from engine.types import Ack

    row = await make_job(driver, ids, clock.now(), state=JobState.RUNNING)
    claim = _claim_of(row)
    t = datetime(2026, 1, 1, 12, tzinfo=UTC)
    for seq, name in enumerate(("fetch", "render", "send")):
        step = StoredStep(row.id, name, seq, "run", "completed", 1, claim.run, t, t, {"n": seq})
        assert await driver.step_save(claim=claim, step=step)  # type: ignore[attr-defined]
    assert await driver.job_ack_many(acks=[Ack(claim, {"ok": 1})], now=clock.now()) == [row.id]
    o = op(driver, clock)
    with pytest.raises(JobsError) as e:
        await o.retry_from_step(row.id, "nope")
    assert e.value.code == "X_UNKNOWN_STEP" and "fetch" in e.value.cause
    res = await o.retry_from_step(row.id, "render", note="re-render")
    assert res.changed and res.state is JobState.READY
    detail = await Introspector(driver, clock=clock).job(row.id)
    assert [s.name for s in detail.steps] == ["fetch"]
    assert [(h.kind, h.actor, h.note) for h in detail.history] == [("retried-from-step", "alice", "re-render")]
    with pytest.raises(JobsError) as e:
        await o.retry_from_step(row.id, "fetch")
    assert e.value.code == "X_INVALID_STATE"


async def test_a_job_an_operator_makes_ready_wakes_its_queues_idle_workers(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    # A retried dead letter, a bulk retry's jobs, a resumed backfill pass, a resumed queue's jobs
    # and a lapsed lease's job are claimable at once: an idle worker must not sit out its poll
    # interval before it claims them, as after an enqueue.
    import asyncio
    from collections.abc import Awaitable, Callable

    async def wakes(queue: str, act: Callable[[], Awaitable[object]]) -> bool:
        await driver.queue_wait(queues=[queue], timeout=0.01)  # the first wait subscribes
        waiting = asyncio.ensure_future(driver.queue_wait(queues=[queue], timeout=10))
        await asyncio.sleep(0)
        await act()
        return await asyncio.wait_for(waiting, 5)

    one = await make_job(driver, ids, clock.now(), state=JobState.DEAD, queue="mail")
    assert await wakes("mail", lambda: op(driver, clock).retry(one.id))
    for _ in range(3):
        await make_job(driver, ids, clock.now(), state=JobState.DEAD, queue="billing")
    assert await wakes("billing", lambda: op(driver, clock).bulk("retry", parse_filter("queue=billing")))
    passed = await make_job(driver, ids, clock.now(), state=JobState.CANCELLED, queue="backfills")
    assert await wakes(
        "backfills", lambda: driver.backfill_pass_resume(job_id=passed.id, now=clock.now(), actor="a", note=None)
    )
    # A paused queue resumed, and a running job whose lease lapsed, given back by the rescuer.
    await op(driver, clock).pause("reports", create=True)
    await make_job(driver, ids, clock.now(), state=JobState.READY, queue="reports")
    assert await wakes("reports", lambda: op(driver, clock).resume("reports"))
    await make_job(driver, ids, clock.now(), state=JobState.RUNNING, queue="imports")
    clock.advance(3600)  # its lease lapsed long ago
    term = await driver.leader_acquire(name="maintenance", holder="m", now=clock.now(), lease_seconds=120)
    assert term is not None
    assert await wakes(
        "imports",
        lambda: driver.job_rescue(leader="maintenance", holder="m", term=term, now=clock.now(), limit=10),
    )
