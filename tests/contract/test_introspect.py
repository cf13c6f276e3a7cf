"""The introspection projections, the same from every driver (memory and postgres)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.introspect import Introspector, make_filter, parse_filter
from engine.projections import Count, JobFilter
from engine.testing import make_job
from engine.types import Ack, JobState, NewJob, WorkerRegistration


def intro(driver: Driver, clock: FakeClock, **kw) -> Introspector:  # type: ignore[no-untyped-def]
    return Introspector(driver, clock=clock, **kw)


async def test_i24_queue_stats_count_by_state_and_parked_counts_as_ready(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    t0 = clock.now()
    for st in (
        JobState.READY,
        JobState.READY,
        JobState.DELAYED,
        JobState.RUNNING,
        JobState.SUSPENDED,
        JobState.DEAD,
        JobState.COMPLETED,
    ):
        await make_job(driver, ids, t0, state=st, queue="emails")
    await make_job(driver, ids, t0, state=JobState.READY, queue="reports")
    clock.advance(30)
    parked = await make_job(driver, ids, clock.now(), state=JobState.PARKED, queue="reports")
    clock.advance(90)
    view = await intro(driver, clock).queues()
    by = {q.name: q for q in view.queues}
    assert sorted(by) == ["emails", "reports"]
    e = by["emails"]
    assert (e.ready, e.delayed, e.running, e.suspended, e.parked, e.dead) == tuple(Count(n) for n in (2, 1, 1, 1, 0, 1))
    assert e.completed_last_hour == Count(1) and e.depth == 2
    r = by["reports"]
    # A shed job waits: it is in the depth and the oldest-ready age (I8, I24).
    assert r.parked == Count(1) and r.depth == 2
    assert r.oldest_ready_at == t0 and r.oldest_ready_age == 120.0
    assert parked.state is JobState.PARKED and not view.estimated


async def test_i24_the_oldest_waiting_row_is_found_across_priorities_and_due_delayed_rows(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    t0 = clock.now()
    # mail: the longest-waiting row has the lowest priority; a delayed row not yet due is not waiting.
    await make_job(driver, ids, t0, queue="mail", priority=0)
    await make_job(driver, ids, t0, state=JobState.DELAYED, queue="mail", priority=5, run_at=t0 + timedelta(hours=1))
    # reports: a delayed row fell due before the ready row was enqueued, so it has waited longest.
    await make_job(
        driver, ids, t0, state=JobState.DELAYED, queue="reports", priority=1, run_at=t0 + timedelta(seconds=5)
    )
    clock.advance(10)
    await make_job(driver, ids, clock.now(), queue="mail", priority=9)
    await make_job(driver, ids, clock.now(), queue="reports", priority=9)
    clock.advance(110)
    by = {q.name: q for q in (await intro(driver, clock).queues()).queues}
    assert by["mail"].oldest_ready_at == t0 and by["mail"].oldest_ready_age == 120.0
    assert by["reports"].oldest_ready_at == t0 + timedelta(seconds=5) and by["reports"].oldest_ready_age == 115.0


async def test_queue_throughput_is_completions_per_calendar_minute_over_the_last_hour(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    clock.advance(30)  # 12:00:30
    await make_job(driver, ids, clock.now(), state=JobState.COMPLETED)  # minute 12:00: out of the hour below
    clock.advance(3490)  # 12:58:40
    for _ in range(3):
        await make_job(driver, ids, clock.now(), state=JobState.COMPLETED)
    clock.advance(85)  # 13:00:05
    await make_job(driver, ids, clock.now(), state=JobState.COMPLETED)
    await make_job(driver, ids, clock.now(), state=JobState.DEAD)  # not a completion
    clock.advance(15)  # 13:00:20: the hour is the minutes 12:01 to 13:00, the one under way last
    (q,) = (await intro(driver, clock).queues()).queues
    assert len(q.throughput) == 60
    assert q.throughput[-1] == 1 and q.throughput[-3] == 3 and sum(q.throughput) == 4
    assert q.completed_last_hour == Count(4)


async def test_the_sparkline_reads_rolled_up_minutes_and_counts_only_the_rows_after_them(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    start = clock.now()  # 12:00:00
    term = await driver.leader_acquire(name="maintenance", holder="h", now=start, lease_seconds=3600)
    assert term is not None
    for at, n in ((10, 2), (70, 1)):  # 12:00:10 twice, 12:01:10 once
        for _ in range(n):
            await make_job(driver, ids, start + timedelta(seconds=at), state=JobState.COMPLETED, queue="mail")
    clock.advance(240)  # 12:04:00: the minutes that closed two minutes ago are 12:00 and 12:01
    rollup = dict(leader="maintenance", holder="h", term=term, now=clock.now(), settle=120.0)
    assert await driver.throughput_rollup(**rollup) == 2  # (12:00, mail) and (12:01, mail)
    assert await driver.throughput_rollup(**rollup) == 0  # never a minute twice
    assert await driver.throughput_rollup(**(rollup | {"term": term + 1})) == 0  # not the leader: nothing
    # Rolled minutes answer from the rollup: their rows pruned still count, and a completion
    # recorded late into a rolled minute (a worker clock 2.5 minutes behind the leader) is in none.
    pruned = await driver.job_prune(
        leader="maintenance",
        holder="h",
        term=term,
        now=clock.now(),
        before=start + timedelta(seconds=30),
        dead_before=start,
        limit=100,
    )
    assert len(pruned) == 2
    await make_job(driver, ids, start + timedelta(seconds=90), state=JobState.COMPLETED, queue="mail")
    await make_job(
        driver, ids, start + timedelta(seconds=180), state=JobState.COMPLETED, queue="mail"
    )  # 12:03: not rolled
    (q,) = (await intro(driver, clock).queues()).queues
    assert q.throughput[-5:] == (2, 1, 0, 1, 0)  # 12:00 .. 12:04
    assert q.completed_last_hour == Count(4)


async def test_counts_past_the_cap_answer_at_least_and_say_so(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    for _ in range(5):
        await make_job(driver, ids, clock.now())
    i = intro(driver, clock, count_cap=3)
    (q,) = (await i.queues()).queues
    assert q.ready == Count(3, "at-least") and str(q.ready) == "≥3" and q.estimated
    page = await i.jobs(limit=2)
    assert page.total == Count(3, "at-least")


async def test_job_page_filters_newest_first(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    now = clock.now()
    a = await make_job(
        driver, ids, now, name="send_invoice", queue="billing", tenant="acme", key="inv:42", input={"invoice_id": 42}
    )
    clock.advance(1)
    b = await make_job(
        driver,
        ids,
        clock.now(),
        name="send_invoice",
        queue="billing",
        tenant="globex",
        key="inv:43",
        input={"invoice_id": 43},
    )
    clock.advance(1)
    c = await make_job(
        driver,
        ids,
        clock.now(),
        state=JobState.DEAD,
        name="send_email",
        tenant="acme",
        key="user:7",
        input={"invoice_id": "42"},
    )
    i = intro(driver, clock)

    async def hits(text: str) -> list[str]:
        return [j.id for j in (await i.jobs(parse_filter(text))).items]

    assert await hits("") == [c.id, b.id, a.id]
    assert await hits("queue=billing") == [b.id, a.id]
    assert await hits("state=dead") == [c.id]
    assert await hits("name=send_invoice tenant=acme") == [a.id]
    assert await hits("code=X_BOOM") == [c.id]
    # A field of the input compares as JSON: 42 is not "42".
    assert await hits("input.invoice_id=42") == [a.id]
    assert [j.id for j in (await i.jobs(parse_filter(['input.invoice_id="42"']))).items] == [c.id]
    assert await hits("search=inv:") == [b.id, a.id]
    assert await hits(f"search={a.id}") == [a.id]
    assert await hits(f"search={b.id[:13]}") == [b.id]  # a hex prefix of an id: the ids it spans
    assert await hits("search=inv%") == []  # LIKE wildcards in the text are literal
    since = (now + timedelta(seconds=1)).isoformat()
    assert await hits(f"since={since}") == [c.id, b.id]
    page = await i.jobs(make_filter(until=now + timedelta(seconds=1), since=now))
    assert [j.id for j in page.items] == [a.id] and page.total == Count(1)
    row = page.items[0]
    assert (row.name, row.queue, row.tenant, row.state, row.idempotency_key) == (
        "send_invoice",
        "billing",
        "acme",
        JobState.READY,
        "inv:42",
    )


async def test_job_page_is_keyset_paginated_and_stable_under_concurrent_inserts(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    made = []
    for _ in range(5):
        made.append((await make_job(driver, ids, clock.now())).id)
        clock.advance(0.01)
    i = intro(driver, clock)
    p1 = await i.jobs(limit=2)
    assert [j.id for j in p1.items] == made[::-1][:2] and p1.next_cursor == made[3]
    # New jobs land while the operator reads page 1: page 2 neither repeats nor skips a row.
    for _ in range(3):
        await make_job(driver, ids, clock.now())
    p2 = await i.jobs(limit=2, cursor=p1.next_cursor)
    p3 = await i.jobs(limit=2, cursor=p2.next_cursor)
    assert [j.id for j in p2.items] == made[::-1][2:4]
    assert [j.id for j in p3.items] == made[:1] and p3.next_cursor is None


async def test_bad_filters_and_ids_are_clear_errors(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    i = intro(driver, clock)
    with pytest.raises(JobsError) as e:
        parse_filter("state=stuck")
    assert e.value.code == "X_UNKNOWN_STATE" and "ready" in e.value.cause
    with pytest.raises(JobsError) as e:
        parse_filter("colour=red")
    assert e.value.code == "X_INVALID_ARGUMENT"
    with pytest.raises(JobsError) as e:
        parse_filter("since=yesterday")
    assert e.value.code == "X_INVALID_ARGUMENT"
    with pytest.raises(JobsError) as e:
        await i.job("not-a-uuid")
    assert e.value.code == "X_MALFORMED_ID"
    with pytest.raises(JobsError) as e:
        await i.job(ids.new())
    assert e.value.code == "X_NOT_FOUND"
    with pytest.raises(JobsError) as e:
        await i.jobs(cursor="garbage")
    assert e.value.code == "X_INVALID_ARGUMENT"
    with pytest.raises(JobsError) as e:
        await i.jobs(limit=0)
    assert e.value.code == "X_INVALID_ARGUMENT"
    with pytest.raises(JobsError) as e:
        make_filter(errorcode="X_CARD_DECLINED")  # type: ignore[call-arg]
    assert e.value.code == "X_INVALID_ARGUMENT" and "did you mean 'error_code'" in e.value.cause
    assert e.value.fix == "make_filter(error_code=...)"
    with pytest.raises(JobsError) as e:
        make_filter(since="1h")  # type: ignore[arg-type]
    assert e.value.code == "X_INVALID_ARGUMENT" and "not a datetime" in e.value.cause


async def test_dead_letters_grouped_by_name_code_and_stop_reason(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    first = await make_job(driver, ids, clock.now(), state=JobState.DEAD, name="charge", tenant="acme", max_attempts=5)
    clock.advance(60)
    last = await make_job(driver, ids, clock.now(), state=JobState.DEAD, name="charge", tenant="globex", max_attempts=5)
    clock.advance(60)
    other = await make_job(driver, ids, clock.now(), state=JobState.DEAD, name="mail")
    await make_job(driver, ids, clock.now(), state=JobState.READY, name="charge")
    dl = await intro(driver, clock).dead_letters()
    assert dl.total == Count(3)
    assert [(g.name, g.error_code, g.stop_reason, g.count) for g in dl.groups] == [
        ("mail", "X_BOOM", "terminal", 1),
        ("charge", "X_BOOM", "terminal", 2),
    ]
    g = dl.groups[1]
    assert (g.first_seen, g.last_seen) == (first.finished_at, last.finished_at)
    assert g.last_job_id == last.id and (g.attempt, g.max_attempts) == (1, 5) and g.tenants == 2
    assert g.last_error == "X_BOOM: boom"
    only = await intro(driver, clock).dead_letters(parse_filter("name=mail"))
    assert [x.last_job_id for x in only.groups] == [other.id]


async def test_a_filter_by_stop_reason_reaches_one_dead_letter_group_only_listed_and_acted_on(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    """A dead-letter group is a name, a code and a stop reason: a filter naming all three (the
    console's group row, `stop=` in the CLI) lists, plans and retries that group's jobs only."""
    from engine.actions import Operator
    from engine.testing import Factory

    f = Factory(driver, ids, clock)
    terminal = await make_job(driver, ids, clock.now(), state=JobState.DEAD, name="charge")
    claim = await f.claim((await f.job(JobState.READY, name="charge")).id)
    await f.nack(claim, "dead", error="X_BOOM: boom", error_code="X_BOOM", stop_reason="attempts-exhausted")
    groups = (await intro(driver, clock).dead_letters()).groups
    assert sorted((g.stop_reason, g.count) for g in groups) == [("attempts-exhausted", 1), ("terminal", 1)]
    where = parse_filter("name=charge code=X_BOOM stop=terminal")
    assert where == JobFilter(name="charge", error_code="X_BOOM", stop_reason="terminal")
    assert [j.id for j in (await intro(driver, clock).jobs(where)).items] == [terminal.id]
    ops = Operator(driver, clock=clock, actor="alice")
    plan = await ops.plan("retry", where)
    assert plan.matched == 1
    assert (await ops.bulk("retry", where)).changed == 1
    assert [g.stop_reason for g in (await intro(driver, clock).dead_letters()).groups] == ["attempts-exhausted"]
    with pytest.raises(JobsError):
        parse_filter("stop=exhausted")


async def test_the_dead_letters_total_and_each_queues_are_exact_past_the_count_cap_as_their_groups_are(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    for _ in range(4):
        await make_job(driver, ids, clock.now(), state=JobState.DEAD, name="charge", queue="billing")
        await make_job(driver, ids, clock.now(), state=JobState.READY, name="charge", queue="billing")
    dl = await intro(driver, clock, count_cap=3).dead_letters()
    assert [g.count for g in dl.groups] == [4] and dl.total == Count(4)  # not "at least 3"
    (q,) = (await intro(driver, clock, count_cap=3).queues()).queues
    assert q.dead == Count(4) and q.ready == Count(3, "at-least")  # the live counts still stop at the cap


async def test_dead_letters_settled_together_order_by_name_and_name_the_newest_id(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    # One batch of nacks shares its `now`: groups tie on last seen, rows tie on finished_at.
    b1 = await make_job(driver, ids, clock.now(), state=JobState.DEAD, name="b")
    b2 = await make_job(driver, ids, clock.now(), state=JobState.DEAD, name="b")
    a = await make_job(driver, ids, clock.now(), state=JobState.DEAD, name="a")
    assert b1.finished_at == b2.finished_at == a.finished_at
    dl = await intro(driver, clock).dead_letters()
    assert [(g.name, g.count, g.last_job_id) for g in dl.groups] == [("a", 1, a.id), ("b", 2, max(b1.id, b2.id))]


async def test_job_detail_has_attempts_history_next_retry_and_why(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD, max_attempts=5)
    d = await intro(driver, clock).job(dead.id)
    assert d.job.id == dead.id and d.stop_reason == "terminal"
    (att,) = d.attempts
    assert (att.worker, att.outcome, att.error_code) == ("w-factory", "dead", "X_BOOM")
    assert d.next_retry is not None and d.next_retry.attempt == 1 and d.next_retry.max_attempts == 5
    assert d.why.causes[0].kind == "dead" and "attempt 1 of 5" in d.why.summary
    assert d.history == ()
    running = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, max_attempts=3)
    r = await intro(driver, clock).job(running.id)
    assert r.next_retry is not None and (r.next_retry.attempt, r.next_retry.dead_if_fails) == (2, False)
    assert r.why.causes[0].kind == "running" and r.why.causes[0].until == running.lease_until


async def test_job_detail_for_another_tenant_is_not_found(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    job = await make_job(driver, ids, clock.now(), tenant="acme")
    with pytest.raises(JobsError) as e:
        await intro(driver, clock, tenant="globex").job(job.id)
    assert e.value.code == "X_NOT_FOUND"
    page = await intro(driver, clock, tenant="globex").jobs()
    assert page.items == ()
    with pytest.raises(JobsError) as e:
        await intro(driver, clock, tenant="globex").jobs(JobFilter(tenant="acme"))
    assert e.value.code == "X_TENANT_MISMATCH"


async def test_why_names_the_sleep_the_event_the_delay_and_the_duplicate(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    i = intro(driver, clock)
    delayed = await make_job(driver, ids, clock.now(), state=JobState.DELAYED)
    why = await i.why_job(delayed.id)
    assert why.causes[0].kind == "delayed" and why.causes[0].until == delayed.run_at
    sleeping = await make_job(driver, ids, clock.now(), state=JobState.SUSPENDED)
    why = await i.why_job(sleeping.id)
    assert why.causes[0].kind == "sleep" and why.causes[0].until == sleeping.run_at
    # No worker registered for the queue: said as a cause too.
    assert "no_worker" in [c.kind for c in why.causes]
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD, key="user:7")
    live = await make_job(driver, ids, clock.now(), key="user:7")
    why = await i.why_job(dead.id)
    dup = next(c for c in why.causes if c.kind == "duplicate")
    assert dup.job_id == live.id and dup.state is JobState.READY


async def test_why_waiting_for_an_event(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    from engine.testing import claim_of as _claim_of
    from engine.types import Nack

    row = await make_job(driver, ids, clock.now(), state=JobState.RUNNING)
    wait = {"kind": "event", "event": "invoice.paid", "match": {"invoice": 42}}
    assert await driver.job_nack(
        nack=Nack(_claim_of(row), "suspend", run_at=clock.now() + timedelta(hours=1), wait=wait), now=clock.now()
    )
    why = await intro(driver, clock).why_job(row.id)
    c = why.causes[0]
    assert (c.kind, c.event, c.match) == ("event", "invoice.paid", {"invoice": 42}) and "invoice.paid" in c.text


async def test_why_a_parked_job_names_the_slot_holders_and_that_a_running_one_renews_its_slot(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    from engine.testing import claim_of as _claim_of
    from engine.types import Nack

    holder = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, name="render")
    assert (
        await driver.slot_acquire(
            key="job:render", limit=1, job_id=holder.id, worker="w-1", now=clock.now(), lease_seconds=30
        )
        == 0
    )  # type: ignore[attr-defined]
    shed = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, name="render")
    wait = {"kind": "limit", "limit": "concurrency", "key": "job:render"}
    assert await driver.job_nack(
        nack=Nack(_claim_of(shed), "park", run_at=clock.now() + timedelta(seconds=5), wait=wait), now=clock.now()
    )
    why = await intro(driver, clock).why_job(shed.id)
    slots = next(c for c in why.causes if c.kind == "slots")
    assert slots.key == "job:render" and slots.limit == 1
    assert [(h.job_id, h.state, h.started_at) for h in slots.holders] == [
        (holder.id, JobState.RUNNING, holder.claimed_at)
    ]
    assert slots.until is None and "renew" in slots.text  # a running holder's lease end is not when it lets go
    clock.advance(90)
    why = await intro(driver, clock).why_job(shed.id)
    waiting = next(c for c in why.causes if c.kind == "waiting")
    assert waiting.text.startswith(f"Waiting since {shed.run_at:%Y-%m-%d %H:%M:%S} UTC (1m30s ago)")


async def test_workers_view_marks_stale_heartbeats_and_a_jobs_why_blames_them_only_when_no_live_worker_serves_it(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    await driver.worker_register(
        worker=WorkerRegistration(id="w-1", host="h1", pid=11, queues=("default",), concurrency=4), now=clock.now()
    )  # type: ignore[attr-defined]
    await driver.worker_register(
        worker=WorkerRegistration(id="w-2", host="h2", pid=22, queues=("default",), concurrency=2), now=clock.now()
    )  # type: ignore[attr-defined]
    clock.advance(60)
    await driver.worker_heartbeat(id="w-2", in_use=1, stopping=False, now=clock.now())  # type: ignore[attr-defined]
    i = intro(driver, clock, stale_after=30)
    wv = await i.workers()
    assert [(w.id, w.stale, w.in_use) for w in wv.workers] == [("w-1", True, 0), ("w-2", False, 1)]
    job = await make_job(driver, ids, clock.now())
    (q,) = (await i.queues()).queues
    assert (q.workers, q.slots_total, q.slots_in_use) == (1, 2, 1)
    why = await i.why_job(job.id)
    assert [c.kind for c in why.causes] == ["ready"]  # w-2 serves it: a stale w-1 is not why it waits
    wq = await i.why_queue("default")
    assert "stale_worker" in [c.kind for c in wq.causes]  # the queue's fleet names it
    clock.advance(60)  # w-2 goes stale too: now no live worker serves the queue
    why = await i.why_job(job.id)
    assert [(c.kind, c.worker) for c in why.causes] == [
        ("stale_worker", "w-1"),
        ("stale_worker", "w-2"),
        ("no_worker", None),
    ]


async def test_why_queue_names_the_pause(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    await driver.queue_pause(queue="default", paused=True, actor="alice", note="deploy", now=clock.now())  # type: ignore[attr-defined]
    await make_job(driver, ids, clock.now())
    why = await intro(driver, clock).why_queue("default")
    p = why.causes[0]
    assert (p.kind, p.by, p.note, p.at) == ("paused", "alice", "deploy", clock.now())


async def test_enqueued_jobs_show_in_the_list_with_their_state(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    new = NewJob(
        id=ids.new(),
        name="n",
        queue="q",
        idempotency_key="k",
        input={},
        max_attempts=1,
        run_at=clock.now() + timedelta(minutes=5),
    )
    await driver.job_enqueue(jobs=[new], now=clock.now())
    page = await intro(driver, clock).jobs(parse_filter("state=delayed"))
    assert [j.id for j in page.items] == [new.id]


async def test_completed_job_detail_has_no_next_retry(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    job = await make_job(driver, ids, clock.now(), state=JobState.COMPLETED)
    d = await intro(driver, clock).job(job.id)
    assert d.next_retry is None and d.job.result == {"ok": True}
    assert d.why.causes[0].kind == "finished"
    assert Ack  # the factory completes through job_ack_many


async def test_i25_a_tenant_scoped_view_refuses_the_fleet_wide_queue_counts(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    await make_job(driver, ids, clock.now(), queue="billing", tenant="globex")
    scoped = intro(driver, clock, tenant="acme")
    for read in (scoped.queues, lambda: scoped.why_queue("billing")):
        with pytest.raises(JobsError) as e:
            await read()
        assert e.value.code == "X_INVALID_ARGUMENT" and "fleet-wide" in e.value.cause and "'acme'" in e.value.cause
    assert [q.name for q in (await intro(driver, clock).queues()).queues] == ["billing"]  # the fleet view still answers
