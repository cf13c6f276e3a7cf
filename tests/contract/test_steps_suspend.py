"""Suspension on every driver (I7): a sleep or an event wait parks the run as `suspended`, burns no
attempt, writes no error, and resumes at its time or when a matching durable event is sent."""

from __future__ import annotations

from datetime import timedelta

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.runtime.steps import StepApi
from engine.types import JobRow, JobState
from tests.contract.test_steps_harness import attempt, enqueue, get


async def test_i7_a_job_sleeping_three_days_is_suspended_not_ready_and_resumes(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock)
    calls: list[str] = []
    start = clock.now()

    async def handler(step: StepApi, row: JobRow) -> str:
        await step.run("before", lambda: calls.append("before"))
        await step.sleep("settle", 3 * 86400)
        await step.run("after", lambda: calls.append("after"))
        return "woke"

    out = await attempt(driver, clock, handler)
    assert out.kind == "suspended" and out.suspension is not None
    until = start + timedelta(days=3)
    assert out.suspension.run_at == until
    assert out.suspension.wait == {"kind": "sleep", "step": "settle", "until": until.isoformat()}
    row = await get(driver, jid)
    assert row.state is JobState.SUSPENDED and row.state is not JobState.READY
    assert (row.attempt, row.last_error, row.error_code, row.run_at) == (0, None, None, until)
    assert row.wait == out.suspension.wait  # what the console's "why is it not running" reads
    assert [a.outcome for a in await driver.job_attempts(job_id=jid)] == ["suspended"]

    clock.advance(3 * 86400 - 1)
    assert (await attempt(driver, clock, handler)).kind == "nothing-due"
    clock.advance(1)
    done = await attempt(driver, clock, handler)
    assert done.kind == "completed" and done.result == "woke"
    assert calls == ["before", "after"]  # the step before the sleep did not run again
    row = await get(driver, jid)
    assert row.state is JobState.COMPLETED and row.attempt == 1  # the sleep burned no attempt


async def test_i7_sleep_until_a_past_instant_does_not_suspend(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    jid = await enqueue(driver, ids, clock)

    async def handler(step: StepApi, row: JobRow) -> str:
        await step.sleep_until("already", clock.now() - timedelta(seconds=1))
        await step.sleep("zero", 0)
        return "ran through"

    out = await attempt(driver, clock, handler)
    assert out.kind == "completed" and out.result == "ran through"
    assert [(s.name, s.status) for s in await driver.step_list(job_id=jid)] == [
        ("already", "completed"),
        ("zero", "completed"),
    ]


async def test_i7_an_event_sent_before_the_wait_is_consumed(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    # An event from before the job existed belongs to someone else's story: it is not matched.
    await driver.event_send(
        id=ids.new(),
        name="workspace.approved",
        payload={"workspace": 7, "by": "old"},
        tenant="acme",
        actor=None,
        now=clock.now(),
    )
    clock.advance(1)
    jid = await enqueue(driver, ids, clock, tenant="acme")
    clock.advance(1)
    # Noise: another tenant, another name, a payload the match does not contain.
    for name, payload, tenant in (
        ("workspace.approved", {"workspace": 7}, "globex"),
        ("workspace.approved", {"workspace": 7}, None),
        ("workspace.rejected", {"workspace": 7}, "acme"),
        ("workspace.approved", {"workspace": 8}, "acme"),
    ):
        await driver.event_send(id=ids.new(), name=name, payload=payload, tenant=tenant, actor=None, now=clock.now())
    sent = await driver.event_send(
        id=ids.new(),
        name="workspace.approved",
        payload={"workspace": 7, "by": "ann"},
        tenant="acme",
        actor="ann",
        now=clock.now(),
    )
    assert sent.woken == 0  # nobody was waiting yet
    clock.advance(60)

    async def handler(step: StepApi, row: JobRow) -> object:
        return await step.wait_for_event("approved", event="workspace.approved", match={"workspace": 7}, timeout=86400)

    out = await attempt(driver, clock, handler)
    assert out.kind == "completed" and out.result == {"workspace": 7, "by": "ann"}
    (wait,) = await driver.step_load(job_id=jid)
    assert (wait.kind, wait.status, wait.event_id, wait.result) == (
        "event",
        "completed",
        sent.id,
        {"workspace": 7, "by": "ann"},
    )


async def test_i7_an_event_wait_suspends_and_a_matching_send_wakes_it(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock, tenant="acme")

    async def handler(step: StepApi, row: JobRow) -> object:
        got = await step.wait_for_event("approved", event="workspace.approved", match={"workspace": {"id": 7}})
        return {"approved_by": got["by"]}

    out = await attempt(driver, clock, handler, event_poll=300)
    assert out.kind == "suspended" and out.suspension is not None
    assert out.suspension.run_at == clock.now() + timedelta(seconds=300)  # the job's event_poll bound
    assert out.suspension.wait == {
        "kind": "event",
        "step": "approved",
        "event": "workspace.approved",
        "match": {"workspace": {"id": 7}},
        "timeout_at": None,
    }
    row = await get(driver, jid)
    assert (row.state, row.attempt, row.last_error) == (JobState.SUSPENDED, 0, None)

    miss = await driver.event_send(
        id=ids.new(),
        name="workspace.approved",
        payload={"workspace": {"id": 8}},
        tenant="acme",
        actor=None,
        now=clock.now(),
    )
    assert miss.woken == 0 and (await get(driver, jid)).run_at > clock.now()
    clock.advance(5)
    hit = await driver.event_send(
        id=ids.new(),
        name="workspace.approved",
        payload={"workspace": {"id": 7, "name": "W"}, "by": "ann"},
        tenant="acme",
        actor="ann",
        now=clock.now(),
    )
    assert hit.woken == 1
    assert (await get(driver, jid)).run_at == clock.now()  # claimable now, not at the next poll
    done = await attempt(driver, clock, handler, event_poll=300)
    assert done.kind == "completed" and done.result == {"approved_by": "ann"}


async def test_i7_an_event_wait_times_out_as_none_and_polls_on_the_way(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock)
    start = clock.now()

    async def handler(step: StepApi, row: JobRow) -> object:
        got = await step.wait_for_event("reply", event="mail.reply", timeout=50)
        return {"reply": got}

    first = await attempt(driver, clock, handler, event_poll=30)
    assert first.suspension is not None and first.suspension.run_at == start + timedelta(seconds=30)
    assert first.suspension.wait["timeout_at"] == (start + timedelta(seconds=50)).isoformat()
    clock.advance(30)
    poll = await attempt(driver, clock, handler, event_poll=30)
    # The timeout is fixed when the wait was first reached, and bounds the next wake-up.
    assert poll.suspension is not None and poll.suspension.run_at == start + timedelta(seconds=50)
    clock.advance(20)
    done = await attempt(driver, clock, handler, event_poll=30)
    assert done.kind == "completed" and done.result == {"reply": None}
    (wait,) = await driver.step_list(job_id=jid)
    assert (wait.status, wait.duration) == ("timed-out", 50.0)
    row = await get(driver, jid)
    # Three claims, one attempt: the polls continued the run's one attempt row (a poll is no attempt).
    assert row.attempt == 1 and row.run == 3
    assert [(a.outcome, a.started_at) for a in await driver.job_attempts(job_id=jid)] == [("completed", start)]


async def test_two_waits_on_one_event_name_each_take_their_own_event(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock)
    clock.advance(1)
    first = await driver.event_send(
        id=ids.new(), name="tick", payload={"n": 1}, tenant=None, actor=None, now=clock.now()
    )

    async def handler(step: StepApi, row: JobRow) -> object:
        a = await step.wait_for_event("tick-1", event="tick")
        b = await step.wait_for_event("tick-2", event="tick")
        return [a["n"], b["n"]]

    assert (await attempt(driver, clock, handler)).kind == "suspended"
    clock.advance(1)
    second = await driver.event_send(
        id=ids.new(), name="tick", payload={"n": 2}, tenant=None, actor=None, now=clock.now()
    )
    assert second.woken == 1
    done = await attempt(driver, clock, handler)
    assert done.kind == "completed" and done.result == [1, 2]
    assert [s.event_id for s in await driver.step_load(job_id=jid)] == [first.id, second.id]


async def test_event_match_is_jsonb_containment_on_both_drivers(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    """The memory driver mirrors `payload @> match` (sql/queries/steps.sql, event_find): objects
    by key recursively, arrays by element, and a boolean is never a number."""
    jid = await enqueue(driver, ids, clock)
    payload = {"order": {"id": 7, "tags": ["gift", "rush"], "paid": True}, "total": 10}
    ev = await driver.event_send(
        id=ids.new(), name="order.paid", payload=payload, tenant=None, actor=None, now=clock.now()
    )
    cases = [
        ({}, True),
        ({"order": {"id": 7}}, True),
        ({"order": {"tags": ["rush"]}}, True),
        ({"order": {"tags": ["rush", "gift"]}, "total": 10.0}, True),
        ({"order": {"paid": True}}, True),
        ({"order": {"paid": 1}}, False),
        ({"total": True}, False),
        ({"order": {"tags": "rush"}}, False),
        ({"order": {"id": "7"}}, False),
        ({"order": {"id": 7, "missing": None}}, False),
        ({"order": 7}, False),
    ]
    for match, hit in cases:
        found = await driver.event_find(
            job_id=jid, name="order.paid", tenant=None, match=match, since=clock.now(), now=clock.now()
        )
        assert (found is not None) is hit, match
        if found is not None:
            assert (found.id, found.payload) == (ev.id, payload)
    # Never a future event, never one from before `since`.
    assert (
        await driver.event_find(
            job_id=jid,
            name="order.paid",
            tenant=None,
            match={},
            since=clock.now(),
            now=clock.now() - timedelta(seconds=1),
        )
        is None
    )
    assert (
        await driver.event_find(
            job_id=jid,
            name="order.paid",
            tenant=None,
            match={},
            since=clock.now() + timedelta(seconds=1),
            now=clock.now() + timedelta(seconds=1),
        )
        is None
    )


async def test_an_event_that_wakes_a_job_is_in_its_history_with_who_sent_it(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    jid = await enqueue(driver, ids, clock, tenant="acme")

    async def handler(step: StepApi, row: JobRow) -> object:
        return await step.wait_for_event("ok", event="workspace.approved", match={"ws": 7})

    assert (await attempt(driver, clock, handler, event_poll=300)).kind == "suspended"
    clock.advance(1)
    eid = ids.new()
    sent = await driver.event_send(
        id=eid, name="workspace.approved", payload={"ws": 7}, tenant="acme", actor="console:ann", now=clock.now()
    )
    assert sent.woken == 1
    (h,) = await driver.job_history(job_id=jid)
    assert (h.kind, h.actor, h.at, h.data) == (
        "event",
        "console:ann",
        clock.now(),
        {"event": "workspace.approved", "event_id": eid},
    )
    # An event that wakes nothing (another tenant's) writes no history.
    await driver.event_send(
        id=ids.new(), name="workspace.approved", payload={"ws": 7}, tenant="globex", actor="x", now=clock.now()
    )
    assert len(await driver.job_history(job_id=jid)) == 1
