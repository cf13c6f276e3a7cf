"""The Schedules screen (key 5): snapshots for busy, empty, paused (the confirm dialog), no leader
and read-only, and Pilot checks of its actions. The seeded hour plus a scheduler run on its own
clock from 09:00 to the seeded NOW (12:00), so the tasks have real runs, skips and a leader."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from console.app import JobsConsole
from console.demo.world import NOW, seeded_source
from console.screens.confirm import ConfirmScreen
from engine.clock import FakeClock
from engine.services.scheduler import Scheduler, SchedulerConfig
from engine.tasks import task
from engine.types import Ack, Claim
from tests.console.conftest import SIZE, drive


async def _noop(ctx, inp):  # type: ignore[no-untyped-def]
    return None


TASKS = [
    task(name="ledger.hourly", cron="0 * * * *", queue="billing")(_noop),
    task(name="digest.quarter", cron="*/15 * * * *", timezone="America/New_York", queue="emails")(_noop),
    task(name="report.nightly", cron="0 2 * * 1-5", timezone="Europe/Paris", queue="reports", catch_up="latest")(_noop),
    task(name="tmp.cleanup", cron="30 3 * * *", queue="reports", catch_up="all", max_catch_up=3)(_noop),
]


def scheduled_source(*, read_only: bool = False, leader_until: timedelta = timedelta(0)):  # type: ignore[no-untyped-def]
    """The seeded source (without its own cron tasks) with these tasks declared at 09:00, down from 09:10 to 11:00 (so the
    quarter-hourly digest skipped what it missed), run until NOW - ``leader_until``."""
    source = seeded_source(read_only=read_only, cron=False)
    driver = source.engine.driver
    clock = FakeClock(NOW - timedelta(hours=3))
    cfg = SchedulerConfig(interval=10.0, leader_lease=90.0)
    s = Scheduler(driver, clock, TASKS, holder="app1:4242:5e1f", config=cfg, host="app1", pid=4242)

    async def play() -> None:
        await s.run_once()
        clock.advance(600)
        await s.run_once()
        clock.advance(6600)  # nobody ran from 09:10 to 11:00
        while clock.now() < NOW - leader_until:
            await s.run_once()
            batch = await driver.worker_claim(
                queues=["billing", "emails"], limit=10, worker="w-app1", now=clock.now(), lease_seconds=30
            )
            claimed = batch.jobs
            await driver.job_ack_many(
                acks=[Ack(Claim(c.row.id, c.row.claimed_by or "", c.row.run), None) for c in claimed], now=clock.now()
            )
            clock.advance(60)
        await driver.schedule_pause(task="tmp.cleanup", paused=True, actor="alice", note="disk full", now=clock.now())

    with ThreadPoolExecutor(1) as pool:  # a test's own loop may be running: play on another
        pool.submit(asyncio.run, play()).result()
    return source


@pytest.fixture
def sched_app() -> JobsConsole:
    return JobsConsole(scheduled_source(), refresh=60)


def test_schedules_busy(snap_compare, sched_app: JobsConsole) -> None:
    assert snap_compare(sched_app, terminal_size=SIZE, run_before=drive("5"))


def test_schedules_empty(snap_compare, empty_app: JobsConsole) -> None:
    assert snap_compare(empty_app, terminal_size=SIZE, run_before=drive("5"))


def test_schedules_pause_confirm(snap_compare, sched_app: JobsConsole) -> None:
    assert snap_compare(sched_app, terminal_size=SIZE, run_before=drive("5", "p"))


def test_schedules_no_leader(snap_compare) -> None:
    app = JobsConsole(scheduled_source(leader_until=timedelta(minutes=20)), refresh=60)
    assert snap_compare(app, terminal_size=SIZE, run_before=drive("5"))


def test_schedules_read_only(snap_compare) -> None:
    app = JobsConsole(scheduled_source(read_only=True), refresh=60)
    assert snap_compare(app, terminal_size=SIZE, run_before=drive("5"))


async def test_pause_then_trigger_from_the_screen_are_audited() -> None:
    app = JobsConsole(scheduled_source(), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await drive("5", "p")(pilot)  # the first row: digest.quarter
        assert isinstance(app.screen, ConfirmScreen)
        assert "Pause task digest.quarter" in str(app.screen.query_one("#confirm-text").render())
        await drive("y")(pilot)
        await drive("t", "y")(pilot)
    view = await app.source.schedules()
    [digest] = [t for t in view.tasks if t.name == "digest.quarter"]
    assert digest.paused and digest.paused_by == "console:test"
    history = [
        h
        for j in (
            await app.source.engine.driver.job_page(
                where=__import__("engine.projections").projections.JobFilter(name="digest.quarter"),
                limit=200,
                cursor=None,
                count_cap=500,
                budget_ms=None,
            )
        ).items  # noqa: E501
        for h in await app.source.engine.driver.job_history(job_id=j.id)
        if h.kind == "triggered"
    ]
    assert [h.actor for h in history] == ["console:test"]


async def test_read_only_offers_no_pause_or_trigger() -> None:
    app = JobsConsole(scheduled_source(read_only=True), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await drive("5", "p", "t")(pilot)
        assert not app.screen.check_action("toggle_task", ())
        assert not app.screen.check_action("trigger", ())
    assert not any(t.paused for t in (await app.source.schedules()).tasks if t.name != "tmp.cleanup")


async def test_enter_opens_the_last_runs_job() -> None:
    from console.screens.job_detail import JobDetailScreen

    app = JobsConsole(scheduled_source(), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await drive("5", "enter")(pilot)
        assert isinstance(app.screen, JobDetailScreen)
        view = await app.source.schedules()
        assert app.screen.job_id == next(t.last_job_id for t in view.tasks if t.name == "digest.quarter")


async def test_the_selected_task_names_enter_and_its_job_s_breadcrumb_names_schedules() -> None:
    """Enter (the table's own key, not in the footer) is said under the table; the job it opens
    is one level below Schedules, as a job opened from any other screen is below it."""
    from console.widgets.nav import NavBar

    app = JobsConsole(scheduled_source(), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await drive("5")(pilot)
        assert "Enter: that run's job" in str(app.screen.query_one("#detail").render())
        await drive("enter")(pilot)
        crumbs = str(app.screen.query_one(NavBar).render())
        assert "Schedules › job " in crumbs, crumbs
