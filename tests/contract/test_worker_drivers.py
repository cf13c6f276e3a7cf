"""The worker's driver areas (workers, limits, maintenance), run against every driver."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.introspect import Introspector
from engine.testing import make_job
from engine.types import Ack, Claim, JobState, Nack, NewJob, QueueGauges, WorkerRegistration

LEASE = 30.0


def _new(ids: IdFactory, queue: str = "default", **kw) -> NewJob:  # type: ignore[no-untyped-def]
    jid = ids.new()
    return NewJob(
        id=jid,
        name=kw.pop("name", "send_email"),
        queue=queue,
        idempotency_key=f"k:{jid}",
        input={"n": 1},
        max_attempts=kw.pop("max_attempts", 3),
        **kw,
    )


async def test_worker_rows_register_heartbeat_list_deregister(driver: Driver, clock: FakeClock) -> None:
    await driver.worker_register(
        worker=WorkerRegistration(id="w-b", host="h1", pid=11, queues=("mail", "default"), concurrency=8),
        now=clock.now(),
    )
    await driver.worker_register(
        worker=WorkerRegistration(id="w-a", host="h2", pid=12, queues=("default",), concurrency=2), now=clock.now()
    )
    clock.advance(4)
    assert await driver.worker_heartbeat(id="w-b", in_use=3, stopping=False, now=clock.now())
    clock.advance(1)
    ws = await driver.worker_list(now=clock.now())
    assert [w.id for w in ws] == ["w-a", "w-b"]
    a, b = ws
    assert (b.host, b.pid, b.queues, b.concurrency, b.in_use, b.stopping) == (
        "h1",
        11,
        ("mail", "default"),
        8,
        3,
        False,
    )
    assert (a.heartbeat_age, b.heartbeat_age) == (5.0, 1.0)
    await driver.worker_deregister(id="w-b")
    assert [w.id for w in await driver.worker_list(now=clock.now())] == ["w-a"]
    assert not await driver.worker_heartbeat(id="w-b", in_use=0, stopping=True, now=clock.now())
    clock.advance(700)
    assert await driver.worker_reap(before=clock.now() - timedelta(seconds=600)) == ["w-a"]


async def test_worker_claim_leases_in_claim_order_and_says_when_work_falls_due(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    now = clock.now()
    low = _new(ids, priority=0)
    high = _new(ids, priority=5)
    other = _new(ids, queue="mail")
    later = _new(ids, run_at=now + timedelta(seconds=10))
    await driver.job_enqueue(jobs=[low, high, other, later], now=now)
    got = await driver.worker_claim(queues=["default", "mail"], limit=10, worker="w1", now=now, lease_seconds=LEASE)
    assert [c.row.id for c in got.jobs] == [high.id, low.id, other.id]  # priority, then run_at, then id
    assert all(c.row.state is JobState.RUNNING and c.row.attempt == 1 and c.row.claimed_by == "w1" for c in got.jobs)
    assert got.next_due == later.run_at  # short of its limit: when the queues next have work
    empty = await driver.worker_claim(queues=["default"], limit=10, worker="w2", now=now, lease_seconds=LEASE)
    assert (empty.jobs, empty.next_due) == ([], later.run_at)
    clock.advance(10)
    last = await driver.worker_claim(queues=["default"], limit=1, worker="w2", now=clock.now(), lease_seconds=LEASE)
    assert [c.row.id for c in last.jobs] == [later.id] and last.next_due is None  # a full claim does not ask
    assert (
        await driver.worker_claim(queues=["default"], limit=1, worker="w2", now=clock.now(), lease_seconds=LEASE)
    ).next_due is None


async def test_a_short_claim_says_when_work_it_did_not_take_falls_due(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    # When the queues next have work the claim did not take: the first ready row left in claim
    # order (locked by another worker's claim right now, say), else the earliest delayed, parked
    # or suspended row; paused queues and the rows just taken never count.
    now = clock.now()
    soon = _new(ids, run_at=now + timedelta(seconds=5))
    paused_soon = _new(ids, queue="held", run_at=now + timedelta(seconds=1))
    ready = _new(ids, priority=3)
    await driver.job_enqueue(jobs=[soon, paused_soon, ready], now=now)
    await driver.queue_pause(queue="held", paused=True, actor="ops", note=None, now=now)
    first = await driver.worker_claim(queues=["default", "held"], limit=5, worker="w1", now=now, lease_seconds=LEASE)
    assert [c.row.id for c in first.jobs] == [ready.id] and first.next_due == soon.run_at
    late = await make_job(driver, ids, now - timedelta(seconds=9), state=JobState.READY)
    other = await driver.worker_claim(queues=["mail"], limit=5, worker="w2", now=now, lease_seconds=LEASE)
    assert (other.jobs, other.next_due) == ([], None)
    taken = await driver.worker_claim(queues=["default"], limit=5, worker="w3", now=now, lease_seconds=LEASE)
    assert [c.row.id for c in taken.jobs] == [late.id] and taken.next_due == soon.run_at


async def test_enqueue_wakes_a_listening_worker(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    # The first wait subscribes (and may answer at once: what came before reached no one).
    await driver.queue_wait(queues=["mail"], timeout=0.01)
    waiting = asyncio.ensure_future(driver.queue_wait(queues=["mail"], timeout=10))
    await asyncio.sleep(0)  # the wait task starts
    await driver.job_enqueue(jobs=[_new(ids, queue="mail")], now=clock.now())
    assert await asyncio.wait_for(waiting, 5) is True
    # Another queue's work does not wake it; an explicit notify does.
    waiting = asyncio.ensure_future(driver.queue_wait(queues=["mail"], timeout=0.2))
    await driver.job_enqueue(jobs=[_new(ids, queue="other")], now=clock.now())
    assert await waiting is False
    waiting = asyncio.ensure_future(driver.queue_wait(queues=["mail"], timeout=10))
    await asyncio.sleep(0)
    await driver.queue_notify(queues=["mail"])
    assert await asyncio.wait_for(waiting, 5) is True


async def test_i8_queue_gauges_count_parked_as_ready(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    start = clock.now()
    await make_job(driver, ids, start, state=JobState.READY)
    clock.advance(60)
    await make_job(driver, ids, clock.now(), state=JobState.PARKED)
    await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    await make_job(driver, ids, clock.now(), state=JobState.SUSPENDED)
    await make_job(driver, ids, clock.now(), state=JobState.DELAYED)
    clock.advance(30)
    (g,) = await driver.queue_gauges(now=clock.now())
    # ready + parked (I8): the shed job is waiting, not gone; the oldest is the first ready one.
    assert (g.queue, g.depth, g.dead) == ("default", 2, 1)
    assert g.oldest_ready_seconds == 90.0


async def test_i24_a_gauge_count_answers_the_fleet_for_max_age_with_its_oldest_age_advanced(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    # Every worker asks for the gauges each interval; the fleet counts once per max_age.
    await make_job(driver, ids, clock.now(), queue="mail")
    await make_job(driver, ids, clock.now(), queue="mail", state=JobState.DEAD)
    assert await driver.queue_gauges(now=clock.now(), max_age=10) == [QueueGauges("mail", 1, 0.0, 1)]
    await make_job(driver, ids, clock.now(), queue="mail")
    await make_job(driver, ids, clock.now(), queue="bills")
    clock.advance(4)
    # Within max_age: the count taken 4 s ago (one waiting, one dead), its oldest age now 4 s.
    assert await driver.queue_gauges(now=clock.now(), max_age=10) == [QueueGauges("mail", 1, 4.0, 1)]
    clock.advance(6)
    # max_age has passed: counted again, every queue.
    assert await driver.queue_gauges(now=clock.now(), max_age=10) == [
        QueueGauges("bills", 1, 10.0, 0),
        QueueGauges("mail", 2, 10.0, 1),
    ]
    await make_job(driver, ids, clock.now(), queue="bills")
    # max_age 0 (the default) always counts.
    assert await driver.queue_gauges(now=clock.now()) == [
        QueueGauges("bills", 2, 10.0, 0),
        QueueGauges("mail", 2, 10.0, 1),
    ]


async def test_i8_concurrency_slots_are_shared_and_leased(driver: Driver, clock: FakeClock) -> None:
    now = clock.now()
    a = await driver.slot_acquire(
        key="concurrency:x",
        limit=2,
        job_id="00000000-0000-7000-8000-000000000001",
        worker="w1",
        now=now,
        lease_seconds=10,
    )
    b = await driver.slot_acquire(
        key="concurrency:x",
        limit=2,
        job_id="00000000-0000-7000-8000-000000000002",
        worker="w2",
        now=now,
        lease_seconds=10,
    )
    c = await driver.slot_acquire(
        key="concurrency:x",
        limit=2,
        job_id="00000000-0000-7000-8000-000000000003",
        worker="w2",
        now=now,
        lease_seconds=10,
    )
    assert sorted([a, b]) == [0, 1] and c is None  # type: ignore[type-var]
    await driver.slot_release(key="concurrency:x", slot=a, job_id="00000000-0000-7000-8000-000000000001")  # type: ignore[arg-type]
    assert (
        await driver.slot_acquire(
            key="concurrency:x",
            limit=2,
            job_id="00000000-0000-7000-8000-000000000003",
            worker="w2",
            now=now,
            lease_seconds=10,
        )
        == a
    )
    # A holder that stopped renewing frees its slot when its lease lapses; a renewed one does not.
    clock.advance(8)
    await driver.slot_renew_many(
        worker="w2", job_ids=["00000000-0000-7000-8000-000000000003"], now=clock.now(), lease_seconds=10
    )
    clock.advance(4)
    d = await driver.slot_acquire(
        key="concurrency:x",
        limit=2,
        job_id="00000000-0000-7000-8000-000000000004",
        worker="w3",
        now=clock.now(),
        lease_seconds=10,
    )
    assert d == b
    assert (
        await driver.slot_acquire(
            key="concurrency:x",
            limit=2,
            job_id="00000000-0000-7000-8000-000000000005",
            worker="w3",
            now=clock.now(),
            lease_seconds=10,
        )
        is None
    )


async def test_i8_rate_buckets_refill_at_their_rate(driver: Driver, clock: FakeClock) -> None:
    waits = [await driver.rate_take(key="rate:x", limit=2, per=1.0, now=clock.now()) for _ in range(3)]
    assert waits[:2] == [0.0, 0.0] and abs(waits[2] - 0.5) < 1e-6  # 2 per second: one token per 0.5 s
    clock.advance(0.5)
    assert await driver.rate_take(key="rate:x", limit=2, per=1.0, now=clock.now()) == 0.0
    assert await driver.rate_take(key="rate:x:acme", limit=2, per=1.0, now=clock.now()) == 0.0  # its own bucket


async def test_leader_lease_is_exclusive_and_fenced_by_term(driver: Driver, clock: FakeClock) -> None:
    now = clock.now()
    assert await driver.leader_acquire(name="maintenance", holder="a", now=now, lease_seconds=10) == 1
    assert await driver.leader_acquire(name="maintenance", holder="b", now=now, lease_seconds=10) is None
    assert await driver.leader_acquire(name="maintenance", holder="a", now=now, lease_seconds=10) == 1  # renewal
    clock.advance(11)
    assert await driver.leader_acquire(name="maintenance", holder="b", now=clock.now(), lease_seconds=10) == 2
    # The old leader's term no longer fences anything.
    assert await driver.job_rescue(leader="maintenance", holder="a", term=1, now=clock.now(), limit=10) == []
    await driver.leader_release(name="maintenance", holder="b", term=2, now=clock.now())
    assert await driver.leader_acquire(name="maintenance", holder="a", now=clock.now(), lease_seconds=10) == 3


async def test_rescue_returns_lapsed_leases_and_records_the_loss(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = (await driver.job_enqueue(jobs=[_new(ids, max_attempts=2)], now=clock.now()))[0].id
    (c,) = (
        await driver.worker_claim(
            queues=["default"], limit=1, worker="dead-worker", now=clock.now(), lease_seconds=LEASE
        )
    ).jobs
    term = await driver.leader_acquire(name="maintenance", holder="m", now=clock.now(), lease_seconds=120)
    assert term is not None
    assert await driver.job_rescue(leader="maintenance", holder="m", term=term, now=clock.now(), limit=10) == []
    clock.advance(LEASE + 1)
    assert await driver.job_rescue(leader="maintenance", holder="m", term=term, now=clock.now(), limit=10) == [
        (jid, JobState.READY)
    ]
    row = await driver.job_get(job_id=jid)
    assert row is not None and (row.state, row.attempt, row.error_code) == (JobState.READY, 1, "X_LEASE_LOST")
    (att,) = await driver.job_attempts(job_id=jid)
    assert (att.outcome, att.worker, att.run) == ("lost", "dead-worker", 1)
    assert [h.kind for h in await driver.job_history(job_id=jid)] == ["lease_lost"]
    # The stale claimant can no longer ack: its fence is gone (I15).
    assert await driver.job_ack_many(acks=[Ack(c.claim, None)], now=clock.now()) == []
    # The lost attempt counts: a second loss on the last attempt is a dead letter with its reason.
    await driver.worker_claim(queues=["default"], limit=1, worker="w2", now=clock.now(), lease_seconds=LEASE)
    clock.advance(LEASE + 1)
    assert await driver.job_rescue(leader="maintenance", holder="m", term=term, now=clock.now(), limit=10) == [
        (jid, JobState.DEAD)
    ]
    row = await driver.job_get(job_id=jid)
    assert row is not None and (row.state, row.stop_reason, row.attempt) == (JobState.DEAD, "attempts-exhausted", 2)
    assert "attempts-exhausted at attempt 2 of 2" in (row.last_error or "")


async def test_prune_deletes_past_retention_in_batches_and_keeps_dead_longer(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    old = [await make_job(driver, ids, clock.now(), state=JobState.COMPLETED) for _ in range(3)]
    cancelled = await make_job(driver, ids, clock.now(), state=JobState.CANCELLED)
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    clock.advance(86400 * 8)
    fresh = await make_job(driver, ids, clock.now(), state=JobState.COMPLETED)
    live = await make_job(driver, ids, clock.now(), state=JobState.READY)
    term = await driver.leader_acquire(name="maintenance", holder="m", now=clock.now(), lease_seconds=60)
    assert term is not None
    before = clock.now() - timedelta(days=7)
    dead_before = clock.now() - timedelta(days=30)
    first = await driver.job_prune(
        leader="maintenance", holder="m", term=term, now=clock.now(), before=before, dead_before=dead_before, limit=2
    )
    second = await driver.job_prune(
        leader="maintenance", holder="m", term=term, now=clock.now(), before=before, dead_before=dead_before, limit=2
    )
    assert len(first) == 2 and sorted(first + second) == sorted([r.id for r in old] + [cancelled.id])
    for r in (dead, fresh, live):
        assert await driver.job_get(job_id=r.id) is not None
    clock.advance(86400 * 30)
    pruned = await driver.job_prune(
        leader="maintenance",
        holder="m",
        term=term,
        now=clock.now(),
        before=clock.now() - timedelta(days=7),
        dead_before=clock.now() - timedelta(days=30),
        limit=10,
    )
    assert pruned == []  # the leader's lease lapsed: nothing happens without a current term
    term = await driver.leader_acquire(name="maintenance", holder="m", now=clock.now(), lease_seconds=60)
    assert term is not None
    pruned = await driver.job_prune(
        leader="maintenance",
        holder="m",
        term=term,
        now=clock.now(),
        before=clock.now() - timedelta(days=7),
        dead_before=clock.now() - timedelta(days=30),
        limit=10,
    )
    assert sorted(pruned) == sorted([dead.id, fresh.id])
    assert await driver.job_get(job_id=live.id) is not None
    assert await driver.job_attempts(job_id=dead.id) == []


async def test_prune_takes_a_jobs_attempts_steps_and_history_with_it(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    # No foreign key cascades these in SQL (schema.sql says why): the pruner's one statement must.
    from engine.types import Claim, StoredStep

    ran = await make_job(driver, ids, clock.now(), state=JobState.READY)
    [claimed] = (
        await driver.worker_claim(queues=[ran.queue], limit=1, worker="w", now=clock.now(), lease_seconds=30)
    ).jobs
    claim = Claim(ran.id, "w", claimed.row.run)
    step = StoredStep(ran.id, "fetch", 0, "run", "completed", 1, claim.run, clock.now(), clock.now(), {"n": 1})
    assert await driver.step_save(claim=claim, step=step)
    assert await driver.job_ack_many(acks=[Ack(claim, None)], now=clock.now()) == [ran.id]
    cancelled = await make_job(driver, ids, clock.now(), state=JobState.READY)
    await driver.job_cancel(job_id=cancelled.id, tenant=None, now=clock.now(), actor="ops")
    kept = await make_job(driver, ids, clock.now(), state=JobState.READY)
    await driver.job_cancel(job_id=kept.id, tenant=None, now=clock.now() + timedelta(days=30), actor="ops")
    assert await driver.job_attempts(job_id=ran.id) and await driver.step_list(job_id=ran.id)
    assert await driver.job_history(job_id=cancelled.id)
    clock.advance(86400 * 8)
    term = await driver.leader_acquire(name="maintenance", holder="m", now=clock.now(), lease_seconds=60)
    assert term is not None
    pruned = await driver.job_prune(
        leader="maintenance",
        holder="m",
        term=term,
        now=clock.now(),
        before=clock.now() - timedelta(days=7),
        dead_before=clock.now() - timedelta(days=30),
        limit=10,
    )
    assert sorted(pruned) == sorted([ran.id, cancelled.id])
    for jid in pruned:
        assert await driver.job_attempts(job_id=jid) == []
        assert await driver.step_list(job_id=jid) == []
        assert await driver.job_history(job_id=jid) == []
    assert [h.kind for h in await driver.job_history(job_id=kept.id)] == ["cancelled"]  # another job's are kept


async def test_i24_a_job_waits_from_when_it_fell_due_not_from_when_it_was_enqueued_or_failed(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    # A job delayed an hour, or retried after a 10-minute backoff, has not waited that long: an
    # alert on the oldest age fired the moment every scheduled job fell due.
    t0 = clock.now()
    await make_job(driver, ids, t0, state=JobState.DELAYED, queue="later", run_at=t0 + timedelta(hours=1))
    retried = await make_job(driver, ids, t0, state=JobState.RUNNING, queue="flaky")
    assert retried.claimed_by is not None
    assert await driver.job_nack(
        nack=Nack(
            Claim(retried.id, retried.claimed_by, retried.run),
            "retry",
            run_at=t0 + timedelta(minutes=10),
            error="X_BOOM: boom",
            error_code="X_BOOM",
        ),
        now=t0,
    )
    clock.advance(3600 + 30)
    gauges = {g.queue: g.oldest_ready_seconds for g in await driver.queue_gauges(now=clock.now())}
    assert gauges == {"later": 30.0, "flaky": 3030.0}
    view = await Introspector(driver, clock=clock).queues()
    assert {q.name: q.oldest_ready_age for q in view.queues} == {"later": 30.0, "flaky": 3030.0}


async def test_i24_a_parked_job_waits_since_it_first_fell_due_however_often_a_limit_sheds_it(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    # Each shed rewrites run_at (when it may be tried again) and updated_at: a job a concurrency
    # limit sheds every 5 s for an hour read an age of at most 5 s, so no alert ever fired.
    t0 = clock.now()
    job = await make_job(driver, ids, t0, queue="limited")
    shed_wait = {"kind": "limit", "limit": "concurrency", "key": "send_email"}

    async def claim_and_shed() -> None:
        (got,) = (
            await driver.worker_claim(queues=["limited"], limit=10, worker="w1", now=clock.now(), lease_seconds=30.0)
        ).jobs
        assert got.row.id == job.id
        assert await driver.job_nack(
            nack=Nack(got.claim, "park", run_at=clock.now() + timedelta(seconds=5), wait=shed_wait), now=clock.now()
        )

    for _ in range(4):  # claimed and shed at t0 + 10, 15, 20 and 25 s
        clock.advance(10 if _ == 0 else 5)
        await claim_and_shed()
    clock.advance(2)
    row = await driver.job_get(job_id=job.id)
    assert row is not None and row.state is JobState.PARKED and row.waiting_since == t0
    gauges = {g.queue: g.oldest_ready_seconds for g in await driver.queue_gauges(now=clock.now())}
    view = await Introspector(driver, clock=clock).queues()
    assert gauges == {"limited": 27.0}
    assert {q.name: q.oldest_ready_age for q in view.queues} == {"limited": 27.0}

    # Admitted at last and completed: nothing of that wait is left on the row. A retry of it
    # that is shed again waits from when the retry made it due.
    clock.advance(3)
    (got,) = (
        await driver.worker_claim(queues=["limited"], limit=10, worker="w1", now=clock.now(), lease_seconds=30.0)
    ).jobs
    assert await driver.job_nack(
        nack=Nack(got.claim, "dead", error="X_BOOM: boom", error_code="X_BOOM", stop_reason="terminal"), now=clock.now()
    )
    assert (await driver.job_get(job_id=job.id)).waiting_since is None  # type: ignore[union-attr]
    clock.advance(60)
    retried_at = clock.now()
    assert (await driver.job_retry_dead(job_id=job.id, tenant=None, now=retried_at, actor="op")).changed
    clock.advance(1)
    await claim_and_shed()
    clock.advance(4)
    assert (await driver.job_get(job_id=job.id)).waiting_since == retried_at  # type: ignore[union-attr]
    gauges = {g.queue: g.oldest_ready_seconds for g in await driver.queue_gauges(now=clock.now())}
    assert gauges == {"limited": 5.0}
