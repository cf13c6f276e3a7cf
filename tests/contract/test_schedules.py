"""The scheduler's driver area (I21) on every driver: declarations, the fenced step (term and
watermark), pause/resume, trigger, and the leader's tick."""

from __future__ import annotations

from datetime import timedelta

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.projections import JobFilter
from engine.schedule import TaskDecl, instant_text, occurrence_key, trigger_key

LEADER = "scheduler"


def decl(name: str = "t.every5", cron: str = "*/5 * * * *", **kw: object) -> TaskDecl:
    base: dict[str, object] = dict(
        name=name,
        cron=cron,
        timezone="UTC",
        catch_up="skip",
        max_catch_up=100,
        queue="cron",
        max_attempts=3,
        priority=0,
        input_text='{"region": "eu"}',
    )
    return TaskDecl(**(base | kw))  # type: ignore[arg-type]


async def _lead(driver: Driver, clock: FakeClock, holder: str = "a", lease: float = 3600.0) -> int:
    term = await driver.leader_acquire(name=LEADER, holder=holder, now=clock.now(), lease_seconds=lease)
    assert term is not None
    return term


def _step(
    driver: Driver, clock: FakeClock, ids: IdFactory, *, term: int, expected, at, holder="a", skipped=0, job=True
):  # type: ignore[no-untyped-def]
    return driver.schedule_advance(
        task="t.every5",
        expected=expected,
        at=at,
        skipped=skipped,
        job_id=ids.new() if job else None,
        key=occurrence_key("t.every5", at),
        scheduled_for=instant_text(at),
        leader=LEADER,
        holder=holder,
        term=term,
        now=clock.now(),
    )


async def test_i21_a_declared_task_owes_occurrences_after_its_declaration_and_keeps_its_state(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    await driver.schedule_declare(tasks=[decl()], now=clock.now())
    [row] = await driver.schedule_list()
    assert (row.task, row.cron, row.queue, row.watermark, row.since, row.skipped) == (
        "t.every5",
        "*/5 * * * *",
        "cron",
        None,
        clock.now(),
        0,
    )
    term = await _lead(driver, clock)
    at = clock.now() + timedelta(minutes=5)
    clock.advance(300)
    assert (await _step(driver, clock, ids, term=term, expected=None, at=at, skipped=2)).moved
    clock.advance(60)
    await driver.schedule_declare(tasks=[decl(cron="*/10 * * * *")], now=clock.now())  # a redeploy
    [row] = await driver.schedule_list()
    assert (row.cron, row.watermark, row.skipped, row.last_at) == ("*/10 * * * *", at, 2, at)


async def test_i21_an_occurrence_and_its_watermark_are_written_together_once(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    await driver.schedule_declare(tasks=[decl()], now=clock.now())
    term = await _lead(driver, clock)
    at = clock.now() + timedelta(minutes=5)
    clock.advance(300)
    first = await _step(driver, clock, ids, term=term, expected=None, at=at)
    assert first.moved and first.job_id is not None
    job = await driver.job_get(job_id=first.job_id)
    assert job is not None
    assert (job.name, job.queue, job.idempotency_key, job.max_attempts) == (
        "t.every5",
        "cron",
        "t.every5@2026-01-01T12:05:00Z",
        3,
    )
    assert job.input == {
        "task": "t.every5",
        "scheduled_for": "2026-01-01T12:05:00Z",
        "trigger": "cron",
        "input": {"region": "eu"},
    }
    # The same step again (a second leader planning from the same watermark): refused whole.
    again = await _step(driver, clock, ids, term=term, expected=None, at=at)
    assert not again.moved
    [row] = await driver.schedule_list()
    assert (row.watermark, row.last_job_id, row.last_job_state) == (at, first.job_id, "ready")
    page = await driver.job_page(where=JobFilter(), limit=10, cursor=None, count_cap=100, budget_ms=None)
    assert len(page.items) == 1


async def test_i21_a_stale_leaders_step_is_refused_by_the_fence(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    await driver.schedule_declare(tasks=[decl()], now=clock.now())
    old = await _lead(driver, clock, "a", lease=30)
    at = clock.now() + timedelta(minutes=5)
    clock.advance(300)  # a's lease lapsed long ago: it stalled
    assert not (await _step(driver, clock, ids, term=old, expected=None, at=at)).moved
    new = await _lead(driver, clock, "b", lease=30)
    assert new == old + 1
    # Even with its old clock reading, a's term is no longer the lease's: nothing is written.
    assert not (await _step(driver, clock, ids, term=old, expected=None, at=at, holder="a")).moved
    assert [r.watermark for r in await driver.schedule_list()] == [None]
    assert (await _step(driver, clock, ids, term=new, expected=None, at=at, holder="b")).moved
    # A not-leading process's tick stamp is refused too.
    assert not await driver.schedule_leader_tick(leader=LEADER, holder="a", term=old, host="h", pid=1, now=clock.now())


async def test_i21_a_skip_only_step_moves_the_watermark_and_counts_without_a_job(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    await driver.schedule_declare(tasks=[decl()], now=clock.now())
    term = await _lead(driver, clock)
    at = clock.now() + timedelta(hours=1)
    clock.advance(3700)
    res = await _step(driver, clock, ids, term=await _lead(driver, clock), expected=None, at=at, skipped=12, job=False)
    assert res.moved and res.job_id is None and term
    [row] = await driver.schedule_list()
    assert (row.watermark, row.skipped, row.last_at, row.last_job_id) == (at, 12, None, None)


async def test_a_paused_task_is_not_advanced_and_a_resume_owes_nothing_from_the_pause(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    await driver.schedule_declare(tasks=[decl()], now=clock.now())
    term = await _lead(driver, clock)
    p = await driver.schedule_pause(task="t.every5", paused=True, actor="alice", note="incident 7", now=clock.now())
    assert p is not None and (p.paused, p.paused_by, p.note, p.changed) == (True, "alice", "incident 7", True)
    again = await driver.schedule_pause(task="t.every5", paused=True, actor="bob", note=None, now=clock.now())
    assert again is not None and (again.changed, again.paused_by) == (False, "alice")
    clock.advance(600)
    at = clock.now() - timedelta(minutes=5)
    assert not (await _step(driver, clock, ids, term=await _lead(driver, clock), expected=None, at=at)).moved
    r = await driver.schedule_pause(task="t.every5", paused=False, actor="bob", note="back", now=clock.now())
    assert r is not None and (r.paused, r.paused_by, r.changed) == (False, "bob", True)
    [row] = await driver.schedule_list()
    assert row.watermark == clock.now() and not row.paused and term
    assert await driver.schedule_pause(task="nope", paused=True, actor="a", note=None, now=clock.now()) is None


async def test_a_trigger_enqueues_now_under_its_own_key_and_is_audited(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    await driver.schedule_declare(tasks=[decl()], now=clock.now())
    key = trigger_key("t.every5", clock.now())
    t = await driver.schedule_trigger(
        task="t.every5",
        job_id=ids.new(),
        key=key,
        scheduled_for=instant_text(clock.now()),
        actor="alice",
        note="rerun for the audit",
        now=clock.now(),
    )
    assert t is not None and t.job_id is not None
    job = await driver.job_get(job_id=t.job_id)
    assert job is not None and job.idempotency_key == key and job.input["trigger"] == "manual"  # type: ignore[index]
    [h] = [h for h in await driver.job_history(job_id=t.job_id) if h.kind == "triggered"]
    assert (h.actor, h.note, h.data) == ("alice", "rerun for the audit", {"task": "t.every5"})
    [row] = await driver.schedule_list()
    assert row.watermark is None  # the cron's own occurrences go on as declared
    none = await driver.schedule_trigger(
        task="nope", job_id=ids.new(), key="k", scheduled_for="x", actor="a", note=None, now=clock.now()
    )
    assert none is None


async def test_the_leader_projection_names_the_holder_its_term_lease_and_last_tick(
    driver: Driver, clock: FakeClock
) -> None:
    assert await driver.schedule_leader_get(leader=LEADER) is None
    term = await _lead(driver, clock, "host-a:42:x", lease=30)
    lead = await driver.schedule_leader_get(leader=LEADER)
    assert lead is not None and (lead.holder, lead.term, lead.ticked_at) == ("host-a:42:x", term, None)
    assert await driver.schedule_leader_tick(
        leader=LEADER, holder="host-a:42:x", term=term, host="host-a", pid=42, now=clock.now()
    )
    lead = await driver.schedule_leader_get(leader=LEADER)
    assert lead is not None
    assert (lead.host, lead.pid, lead.ticked_at, lead.lease_until) == (
        "host-a",
        42,
        clock.now(),
        clock.now() + timedelta(seconds=30),
    )


async def test_a_declaration_is_stamped_seen_and_retired_once_unseen_for_ten_minutes(
    driver: Driver, clock: FakeClock
) -> None:
    declared = clock.now()
    await driver.schedule_declare(tasks=[decl()], now=declared)
    [row] = await driver.schedule_list()
    assert row.seen_at == declared and not row.retired(clock.now())
    clock.advance(600)
    [row] = await driver.schedule_list()
    assert not row.retired(clock.now())  # ten minutes to the second: still owed
    clock.advance(1)
    assert row.retired(clock.now())
    await driver.schedule_seen(tasks=["t.every5", "t.unknown"], now=clock.now())  # an unknown name: nothing
    await driver.schedule_seen(tasks=["t.every5"], now=declared)  # a late stamp never moves it back
    [row] = await driver.schedule_list()
    assert row.seen_at == clock.now() and not row.retired(clock.now())
    await driver.schedule_declare(tasks=[decl(cron="*/10 * * * *")], now=clock.now() + timedelta(seconds=5))
    [row] = await driver.schedule_list()
    assert (row.cron, row.seen_at, row.declared_at) == ("*/10 * * * *", clock.now(), declared)
