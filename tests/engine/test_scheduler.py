"""The Scheduler service on every driver and the fake clock: each occurrence enqueued once by one
leader, a dead leader replaced within a lease, catch-up after an hour of downtime, DST."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import pytest

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.services.scheduler import Scheduler, SchedulerConfig
from engine.tasks import TaskDefinition, task

CFG = SchedulerConfig(interval=5.0, leader_lease=30.0)


async def _noop(ctx, inp):  # type: ignore[no-untyped-def]
    return None


def _task(name: str, cron: str, **kw: object) -> TaskDefinition:
    return task(name=name, cron=cron, queue="cron", **kw)(_noop)  # type: ignore[arg-type]


EVERY5 = _task("s.every5", "*/5 * * * *")
SKIP = _task("s.skip", "*/5 * * * *", catch_up="skip")
LATEST = _task("s.latest", "*/5 * * * *", catch_up="latest")
ALL = _task("s.all", "*/5 * * * *", catch_up="all", max_catch_up=4)
PARIS_SPRING = _task("s.paris_0230", "30 2 * * *", timezone="Europe/Paris")
NY_HOURLY = _task("s.ny_hourly", "0 * * * *", timezone="America/New_York")
NY_0130 = _task("s.ny_0130", "30 1 * * *", timezone="America/New_York")


async def _keys(driver: Driver, name: str) -> list[str]:
    from engine.projections import JobFilter

    page = await driver.job_page(where=JobFilter(name=name), limit=500, cursor=None, count_cap=1000, budget_ms=None)
    return sorted(j.idempotency_key for j in page.items)


async def _run(clock: FakeClock, scheds: list[Scheduler], seconds: float, step: float = 5.0) -> None:
    t = 0.0
    while t < seconds:
        for s in scheds:
            await s.run_once()
        clock.advance(step)
        t += step


async def test_i21_one_leader_enqueues_each_occurrence_once(driver: Driver, clock: FakeClock) -> None:
    a = Scheduler(driver, clock, [EVERY5], holder="a", config=CFG)
    b = Scheduler(driver, clock, [EVERY5], holder="b", config=CFG)
    await _run(clock, [a, b], 3600)  # 12:00 -> 13:00
    keys = await _keys(driver, "s.every5")
    assert keys == [f"s.every5@2026-01-01T12:{m:02d}:00Z" for m in range(5, 60, 5)]
    assert a.term == 1 and b.term is None and a.last is not None and a.last.leader


async def test_i21_a_dead_leader_is_replaced_within_one_lease_and_nothing_repeats_or_is_skipped(
    driver: Driver, clock: FakeClock
) -> None:
    a = Scheduler(driver, clock, [EVERY5], holder="a", config=CFG)
    b = Scheduler(driver, clock, [EVERY5], holder="b", config=CFG)
    await _run(clock, [a, b], 1190)  # a leads until 12:19:50 and dies there
    died = clock.now()
    took_over = None
    while took_over is None:
        res = await b.run_once()
        if res.leader:
            took_over = clock.now()
        else:
            assert res.lease_until is not None
            clock.advance(b.next_wait())  # a follower sleeps until the lease ends
    assert (took_over - died).total_seconds() <= CFG.leader_lease
    await _run(clock, [b], 1200)
    assert clock.now() < datetime(2026, 1, 1, 12, 45, tzinfo=UTC)
    keys = await _keys(driver, "s.every5")
    assert keys == [f"s.every5@2026-01-01T12:{m:02d}:00Z" for m in range(5, 45, 5)]
    assert b.term == 2


@pytest.mark.parametrize(
    ("t", "minutes", "skipped"),
    [
        (SKIP, [], 12),  # the next one (13:05) runs when it falls due
        (LATEST, [0], 11),  # 13:00, the most recent missed one, now
        (ALL, [45, 50, 55, 0], 8),  # the most recent max_catch_up=4
    ],
)
async def test_i21_catch_up_after_an_hour_of_downtime_follows_the_policy(
    driver: Driver, clock: FakeClock, t: TaskDefinition, minutes: list[int], skipped: int
) -> None:
    s = Scheduler(driver, clock, [t], holder="a", config=CFG)
    await s.run_once()  # declared at 12:00:00 and led; then no process runs for an hour
    clock.advance(3750)  # back at 13:02:30: 12:05 ... 13:00 were missed
    res = await s.run_once()
    hour = [f"{t.name}@2026-01-01T{12 if m else 13}:{m:02d}:00Z" for m in minutes]
    assert await _keys(driver, t.name) == sorted(hour)
    assert res.skipped == ({t.name: skipped} if skipped else {})
    [row] = await driver.schedule_list()
    assert row.skipped == skipped and row.watermark == datetime(2026, 1, 1, 13, 0, tzinfo=UTC)
    clock.advance(150)  # 13:05: the schedule goes on
    await s.run_once()
    assert f"{t.name}@2026-01-01T13:05:00Z" in await _keys(driver, t.name)


@pytest.mark.parametrize(
    ("t", "start", "hours", "want"),
    [
        # Europe/Paris springs forward at 02:00 on 2026-03-29: 02:30 runs once, at 03:00 CEST.
        (PARIS_SPRING, datetime(2026, 3, 28, 12, tzinfo=UTC), 48, ["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]),
        # ... and falls back at 03:00 on 2026-10-25: 02:30 happens twice on the wall, runs once.
        (PARIS_SPRING, datetime(2026, 10, 24, 12, tzinfo=UTC), 48, ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]),
        # America/New_York falls back at 02:00 on 2026-11-01: 01:30 twice on the wall, runs once.
        (NY_0130, datetime(2026, 10, 31, 12, tzinfo=UTC), 48, ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]),
        # ... and springs forward at 02:00 on 2026-03-08: hourly runs every elapsed hour, none twice.
        (
            NY_HOURLY,
            datetime(2026, 3, 8, 5, 30, tzinfo=UTC),
            4,
            ["2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z", "2026-03-08T09:00:00Z"],
        ),
    ],
)
async def test_i21_dst_transitions_neither_skip_nor_double_an_occurrence(
    driver: Driver, t: TaskDefinition, start: datetime, hours: int, want: list[str]
) -> None:
    clock = FakeClock(start)
    s = Scheduler(driver, clock, [t], holder="a", config=SchedulerConfig(interval=300.0, leader_lease=900.0))
    await _run(clock, [s], hours * 3600, step=300.0)
    assert await _keys(driver, t.name) == [f"{t.name}@{w}" for w in want]


async def test_a_paused_task_enqueues_nothing_and_its_resume_owes_nothing(driver: Driver, clock: FakeClock) -> None:
    s = Scheduler(driver, clock, [EVERY5], holder="a", config=CFG)
    await s.run_once()
    await driver.schedule_pause(task="s.every5", paused=True, actor="alice", note=None, now=clock.now())
    await _run(clock, [s], 1800)
    assert await _keys(driver, "s.every5") == []
    await driver.schedule_pause(task="s.every5", paused=False, actor="alice", note=None, now=clock.now())
    await _run(clock, [s], 605)  # resumed at 12:30: the 12:05 ... 12:30 of the pause are not owed
    assert await _keys(driver, "s.every5") == ["s.every5@2026-01-01T12:35:00Z", "s.every5@2026-01-01T12:40:00Z"]


async def test_the_leader_schedules_tasks_another_process_declares(driver: Driver, clock: FakeClock) -> None:
    other = Scheduler(driver, clock, [EVERY5], holder="old", config=CFG)
    await other.run_once()
    await other.step_down()
    lead = Scheduler(driver, clock, [], holder="new", config=CFG)  # knows no task of its own
    await _run(clock, [lead, other], 3600)  # the other process lives on as a follower, stamping its task
    assert Counter(k.split("@")[0] for k in await _keys(driver, "s.every5")) == {"s.every5": 11}
    assert other.term is None and lead.term is not None


async def test_a_task_no_process_declares_for_ten_minutes_is_retired_and_resumes_when_declared_again(
    driver: Driver, clock: FakeClock
) -> None:
    """A task removed from the code: its one process is gone (a deploy without it). The leader
    schedules it until RETIRED_AFTER has passed since its last stamp, then none of it; a process
    that declares it again resumes it, what it missed under its catch-up (skip)."""
    from engine.introspect.schedules import task_view

    removed = Scheduler(driver, clock, [EVERY5], holder="old", config=CFG)
    await removed.run_once()
    await removed.step_down()
    lead = Scheduler(driver, clock, [], holder="new", config=CFG)
    await _run(clock, [lead], 3600)  # 12:00 -> 13:00
    assert await _keys(driver, "s.every5") == ["s.every5@2026-01-01T12:05:00Z", "s.every5@2026-01-01T12:10:00Z"]
    [row] = await driver.schedule_list()
    view = task_view(row, clock.now())
    assert (view.retired, view.next_at, view.seen_at) == (True, None, datetime(2026, 1, 1, 12, tzinfo=UTC))
    back = Scheduler(driver, clock, [EVERY5], holder="back", config=CFG)  # declared again at 13:00
    await _run(clock, [lead, back], 605)
    assert (await _keys(driver, "s.every5"))[2:] == [
        "s.every5@2026-01-01T13:00:00Z",
        "s.every5@2026-01-01T13:05:00Z",
        "s.every5@2026-01-01T13:10:00Z",
    ]
    [row] = await driver.schedule_list()
    assert not row.retired(clock.now()) and row.skipped == 9  # 12:15 ... 12:55, by catch-up


def test_a_scheduler_setting_out_of_range_is_refused() -> None:
    from engine.errors import JobsError

    for bad in ({"interval": 0}, {"leader_lease": -1}, {"grace": 0}, {"interval": 30, "leader_lease": 30}):
        with pytest.raises(JobsError):
            SchedulerConfig(**bad)  # type: ignore[arg-type]


def test_a_scheduler_leader_lease_below_a_second_is_refused_as_the_other_leaders_are() -> None:
    from engine.errors import JobsError

    with pytest.raises(JobsError) as err:
        SchedulerConfig(interval=0.001, leader_lease=0.002)
    assert err.value.code == "X_INVALID_ARGUMENT" and "leader_lease=0.002 is below 1 s" in err.value.cause
    assert err.value.fix == "SchedulerConfig(leader_lease=30)"
    assert SchedulerConfig(interval=0.5, leader_lease=1.0).leader_lease == 1.0


async def test_metrics_count_occurrences_enqueued_and_skipped_and_the_leaders_tick_age(
    driver: Driver, clock: FakeClock
) -> None:
    from engine.runtime.metrics import Metrics

    m_lead, m_follow = Metrics(), Metrics()
    lead = Scheduler(driver, clock, [LATEST], holder="a", config=CFG, metrics=m_lead)
    follow = Scheduler(driver, clock, [LATEST], holder="b", config=CFG, metrics=m_follow)
    await lead.run_once()
    await follow.run_once()
    assert m_follow.registry.get_sample_value("jobs_scheduler_leader_tick_age_seconds") == 0.0
    clock.advance(3750)
    await lead.run_once()  # back at 13:02:30: 13:00 enqueued, the 11 before it skipped
    sample = m_lead.registry.get_sample_value
    assert sample("jobs_schedule_occurrences_enqueued_total", {"task": "s.latest"}) == 1
    assert sample("jobs_schedule_occurrences_skipped_total", {"task": "s.latest"}) == 11
    clock.advance(20)
    await follow.run_once()  # the leader last ticked 20 s ago
    assert m_follow.registry.get_sample_value("jobs_scheduler_leader_tick_age_seconds") == 20.0
