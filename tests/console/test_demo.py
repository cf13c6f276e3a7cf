"""`jobs-console demo`: the embedded demo starts on a real PostgreSQL, says which driver it runs
on, falls back to memory only when no server can start, runs the real worker, and leaves no
server process or directory behind when it stops."""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from console.demo import jobs as demo_jobs
from console.demo.app import Demo
from console.demo.jobs import QUEUES
from console.demo.outbox import LIVE_FIRST_ORDER, checkouts
from console.demo.traffic import Traffic
from console.demo.world import NOW, PAUSED, START, WORKERS, memory_backfills, play_world, seeded_source
from console.demo.world_backfills import ENVIRONMENT
from engine import FakeClock, connect
from engine.ids import IdFactory
from engine.introspect import Introspector
from engine.introspect.schedules import Schedules
from engine.projections import JobFilter
from engine.types import JobState


@pytest.fixture(autouse=True)
def no_pretend_work() -> Iterator[None]:
    before = demo_jobs.PACE.scale
    yield
    demo_jobs.PACE.scale = before


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie is dead; only its parent's reaping is missing


def test_the_demo_runs_on_embedded_postgres_and_stops_without_orphans() -> None:
    demo = Demo(traffic=False, pace=0, world=False).start()
    try:
        assert demo.backend == "postgres" and demo.fallback is None
        assert demo.source.driver == "postgres"
        assert "throwaway" in demo.source.database
        directory = demo._cluster.directory
        postmaster = int((directory / "data" / "postmaster.pid").read_text().split()[0])
        assert _alive(postmaster)
        burst = asyncio.run(demo.source.jobs(JobFilter(), limit=200))
        enqueued = [j for j in burst.items if j.name != "render_statement"]  # not those a run enqueued
        assert len(enqueued) == len(Traffic().first_burst(demo.engine.clock.now()))
    finally:
        demo.stop()
    assert not _alive(postmaster)
    assert not directory.exists()
    assert logging.getLogger("jobs").propagate  # the process's logger is handed back
    demo.stop()  # idempotent


def test_the_demo_falls_back_to_memory_only_when_no_server_can_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("JOBS_PG_BINARIES", str(tmp_path / "no-server-here"))
    demo = Demo(traffic=False, pace=0, world=False).start()
    try:
        assert demo.backend == "memory"
        assert demo.fallback and "no initdb/pg_ctl/postgres" in demo.fallback
        assert demo.source.driver == "memory (no PostgreSQL server could start)"
        assert demo.source.database == "demo in memory (nothing is stored)"
    finally:
        demo.stop()


def test_a_forced_memory_demo_is_labelled_plainly() -> None:
    demo = Demo(force_memory=True, traffic=False, pace=0, world=False).start()
    try:
        assert (demo.backend, demo.fallback, demo.source.driver) == ("memory", None, "memory")
    finally:
        demo.stop()


async def test_the_memory_demo_runs_its_worker_on_the_consoles_loop() -> None:
    """On memory the worker shares the console's loop (only one loop may touch the collections):
    the console sees the first burst worked, and quitting drains the worker."""
    from console.cli import Options, make_app

    outcomes: set[str] = set()
    both = asyncio.Event()

    def seen(ex) -> None:  # type: ignore[no-untyped-def]
        outcomes.add(ex.outcome)
        if {"dead", "completed"} <= outcomes:
            both.set()

    demo = Demo(force_memory=True, traffic=False, pace=0, world=False, on_execution=seen)
    await asyncio.to_thread(demo.start)
    app = make_app(demo.source, Options(refresh=60.0))
    background = asyncio.create_task(demo._serve())  # what Demo.run does around app.run_async()
    try:
        async with app.run_test(size=(120, 36)):
            await asyncio.wait_for(both.wait(), timeout=60)
            view = await demo.source.queues()
            assert sum(q.dead.value for q in view.queues) >= 1
            assert sum(getattr(q.completed_last_hour, "value", q.completed_last_hour) for q in view.queues) >= 1
    finally:
        demo._halt()
        await asyncio.wait_for(background, timeout=30)
        await asyncio.to_thread(demo.stop)
    page = await demo.source.jobs(JobFilter(state=JobState.RUNNING), limit=50)
    assert not page.items  # the drain finished or released everything it held


def test_the_demo_shows_the_world_the_snapshots_show() -> None:
    """The live demo plays the same world as the seeded memory engine behind the snapshots and
    screenshots: the same queues, job names, workers and paused queue, with an hour of history."""
    seeded = seeded_source()
    demo = Demo(traffic=False, pace=0).start()
    try:

        async def both() -> tuple:  # type: ignore[type-arg]
            return await seeded.queues(), await demo.source.queues(), await demo.source.workers()

        snap, live, workers = asyncio.run(both())
        assert [q.name for q in live.queues] == [q.name for q in snap.queues] == sorted(QUEUES)
        assert {q.name for q in live.queues if q.paused} == {PAUSED[0]}
        assert sum(live_q.completed_last_hour.value for live_q in live.queues) > 500  # the hour of history
        assert {w.id for w in workers.workers} >= {wid for wid, *_ in WORKERS}
        dead = asyncio.run(demo.source.jobs(JobFilter(state=JobState.DEAD), limit=200))
        assert {j.name for j in dead.items} >= {"charge_card", "send_email", "send_receipt", "deliver_webhook"}
        outbox, _ = asyncio.run(demo.source.outbox())  # the world's checkouts: published by its relays
        assert outbox.published_last_hour >= 20
    finally:
        demo.stop()
        seeded.engine.close()


def test_a_live_checkout_stages_in_its_own_transaction_and_only_what_commits_is_published() -> None:
    """Each beat's checkout stages its receipt on a psycopg connection of the shop's own: the
    workers' relays publish the committed ones and the worker sends them; a rolled-back checkout
    leaves no outbox row and no job."""
    plan = list(itertools.islice(checkouts(7, first=LIVE_FIRST_ORDER), 8))
    committed = [c.order for c in plan if c.commit]
    sent: list[str] = []
    all_sent = threading.Event()

    def seen(ex) -> None:  # type: ignore[no-untyped-def]
        if ex.name == "send_receipt" and ex.outcome == "completed":
            sent.append(ex.job_id)
            if len(sent) == len(committed) + 1:  # and the first burst's receipt (its slow one never completes)
                all_sent.set()

    demo = Demo(traffic=False, pace=0, world=False, on_execution=seen).start()
    try:
        assert [asyncio.run(demo.checkout()) for _ in plan] == [c.commit for c in plan]
        assert all_sent.wait(timeout=60)
        jobs = asyncio.run(demo.source.jobs(JobFilter(name="send_receipt"), limit=200))
        orders = {j.idempotency_key.removeprefix("receipt:") for j in jobs.items}
        assert orders >= set(committed) and not orders & {c.order for c in plan if not c.commit}
        view, rows = asyncio.run(demo.source.outbox())
        assert (view.backlog, view.published_last_hour, rows) == (0, len(committed), ())
        assert len(view.relays) == 2  # one relay in each worker
    finally:
        demo.stop()


def test_the_demos_month_close_fans_out_its_statements_and_goes_on_once_they_have_rendered() -> None:
    """The first burst's close_month enqueues four statements in a step and waits for them with
    ctx.step.wait_for_jobs; the live worker renders them, and the close's next look finds them
    settled and completes with their count."""
    closed: list[str] = []
    done = threading.Event()

    def seen(ex) -> None:  # type: ignore[no-untyped-def]
        if ex.name == "close_month" and ex.outcome == "completed":
            closed.append(ex.job_id)
            done.set()

    demo = Demo(traffic=False, pace=0, world=False, on_execution=seen).start()
    try:
        assert done.wait(timeout=60)
        row = demo.engine.get(closed[0])
        assert row.result == {"month": row.input["month"], "statements": 4, "of": 4}
        statements = asyncio.run(demo.source.jobs(JobFilter(name="render_statement"), limit=50))
        assert {j.state for j in statements.items} == {JobState.COMPLETED} and len(statements.items) == 4
        steps = asyncio.run(demo.source.job(closed[0])).steps
        assert [(s.name, s.kind, s.status) for s in steps] == [
            ("fan-out", "enqueue", "completed"),
            ("statements", "jobs", "completed"),
        ]
    finally:
        demo.stop()


def test_the_demo_announces_the_dsn_the_cli_can_use() -> None:
    from engine import connect

    demo = Demo(traffic=False, pace=0, world=False).start()
    try:
        said = demo.announce()
        assert demo.dsn is not None and repr(demo.dsn) in said and "jobsctl queues" in said
        assert f"host={demo._cluster.directory}" in demo.source.database  # the header names it too
        other = connect(demo.dsn)  # what `JOBS_DSN=... jobsctl queues` opens
        try:
            assert other.enqueue_many([]) == []
        finally:
            other.close()
    finally:
        demo.stop()
    assert "in memory" in Demo(force_memory=True).announce()


def test_i22_the_demo_opens_with_a_backfill_pass_that_its_live_worker_resumes() -> None:
    """The world's running pass of accounts_plan_tier is handed to the live worker, which replays
    the world's 30 batches and reads on from their cursor over the demo's real table, while
    accounts_email_lower stays pending in staging and production."""
    demo = Demo(traffic=False, pace=0).start()
    try:

        async def watch() -> tuple[list[tuple[str, str, str]], int]:
            board = await demo.source.backfills()
            shown = [(v.name, v.environment, v.status) for v in board.rows]
            running = board.rows[-1].last
            # The world's pass (carol's, 30 batches of 200), or already past it: the live worker
            # may have read on from its cursor before this first look.
            assert running.actor == "carol" and running.batches >= 30
            assert running.swept == running.batches * 200
            # No event reports a batch: the ledger, which the pass writes after each one, is polled.
            for _ in range(300):
                [run] = await demo.engine.driver.backfill_runs(
                    names=["accounts_plan_tier"], environment="production", limit=1
                )
                if run.swept > 6000:
                    return shown, run.swept
                await asyncio.sleep(0.1)
            return shown, run.swept

        shown, swept = asyncio.run(watch())
        assert shown == [
            ("accounts_email_lower", "production", "pending"),
            ("accounts_email_lower", "staging", "pending"),
            ("accounts_plan_tier", "production", "running"),
        ]
        assert swept > 6000 and swept % 200 == 0  # whole batches of 200 after the world's 6,000
    finally:
        demo.stop()


@pytest.mark.parametrize("second", [0, 50])
async def test_the_worlds_minutely_task_ran_each_minute_whatever_second_its_hour_ends_at(second: int) -> None:
    # The live demo's hour ends at the real now, and the world ticks its scheduler once a minute
    # at that second: ended at :50, each tick comes 50 s after its minutely occurrence, which
    # must still count as on time, or the hour shows sixty skipped and no run.
    offset = timedelta(seconds=second)
    clock = FakeClock(START + offset)
    engine = connect("memory://", clock=clock, ids=IdFactory(clock, seed=7), environment=ENVIRONMENT)
    await play_world(engine, ending=NOW + offset, backfills=memory_backfills())
    view = await Schedules(engine, actor="test", read_only=True).view()
    (task,) = [t for t in view.tasks if t.name == demo_jobs.heartbeat_report.name]
    assert task.skipped == 0
    assert task.last_at is not None and NOW + offset - task.last_at < timedelta(minutes=1)
    ran = await Introspector(engine).jobs(JobFilter(name=task.name), limit=100)
    assert ran.total.value >= 59  # an occurrence a minute, across the hour
