"""`jobsctl schedule` and its actions on real Postgres, the projection it prints, the read-only
refusal, and the scheduler inside `eng.worker(...)` (drained with it, I14)."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import pytest
from typer.testing import CliRunner

from engine.api import Engine, connect
from engine.clock import FakeClock, SystemClock
from engine.drivers.postgres import PostgresDriver
from engine.errors import JobsError
from engine.introspect.schedules import Schedules
from engine.services.scheduler import Scheduler, SchedulerConfig
from engine.tasks import TaskDefinition, task


@task(name="cli.nightly", cron="0 2 * * *", timezone="Europe/Paris", queue="cron", input={"report": "daily"})
async def nightly(ctx, inp):  # type: ignore[no-untyped-def]
    return inp["scheduled_for"]


@task(name="cli.gone", cron="*/5 * * * *", queue="cron")
async def gone(ctx, inp):  # type: ignore[no-untyped-def]
    return None


def _declared(dsn: str, clock: FakeClock, tasks: tuple[TaskDefinition, ...] = (nightly,)) -> None:
    async def go() -> None:
        d = PostgresDriver(dsn)
        await Scheduler(d, clock, tasks, holder="host-a:7:x", config=SchedulerConfig()).run_once()
        await d.close()

    asyncio.run(go())


def _cli(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(__import__("engine.cli").cli.app, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_jobs_schedule_and_jobs_workers_say_what_starts_one_when_there_is_none(pg_dsn: str) -> None:
    code, out, _ = _cli("schedule", "--dsn", pg_dsn)
    assert code == 0 and out.splitlines() == [
        "no cron task is declared: `jobsctl worker MODULE` declares the @task handlers MODULE holds",
        "leader: none has ever led",
    ]
    code, out, _ = _cli("workers", "--dsn", pg_dsn)
    assert code == 0 and out.splitlines() == ["no worker is registered: `jobsctl worker MODULE` starts one"]


def test_jobs_schedule_lists_tasks_words_next_and_the_leader(pg_dsn: str) -> None:
    _declared(pg_dsn, FakeClock(SystemClock().now()))  # declared now: the CLI reads the real clock
    code, out, err = _cli("schedule", "--dsn", pg_dsn, "--json")
    assert code == 0, err
    view = json.loads(out)
    [t] = view["tasks"]
    assert (t["name"], t["cron"], t["words"], t["timezone"], t["catch_up"], t["paused"]) == (
        "cli.nightly",
        "0 2 * * *",
        "At 02:00 every day",
        "Europe/Paris",
        "skip",
        False,
    )
    assert t["next_at"] is not None and t["last_at"] is None and t["skipped"] == 0 and not t["retired"]
    assert view["leader"]["holder"] == "host-a:7:x" and view["leader"]["term"] == 1
    code, out, _ = _cli("schedule", "--dsn", pg_dsn)
    assert code == 0 and "cli.nightly" in out and "At 02:00 every day" in out and "leader: host-a:7:x" in out


def test_jobs_schedule_says_a_task_no_process_declares_any_more_is_retired(pg_dsn: str) -> None:
    _declared(pg_dsn, FakeClock(SystemClock().now()))
    _declared(pg_dsn, FakeClock(SystemClock().now() - timedelta(minutes=11)), (gone,))  # last declared then
    code, out, _ = _cli("schedule", "--dsn", pg_dsn, "--json")
    tasks = {t["name"]: t for t in json.loads(out)["tasks"]}
    assert (tasks["cli.gone"]["retired"], tasks["cli.gone"]["next_at"]) == (True, None)
    assert not tasks["cli.nightly"]["retired"]
    code, out, _ = _cli("schedule", "--dsn", pg_dsn)
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.startswith("│")}
    assert "RETIRED: undeclared since" in rows["cli.gone"] and " on " in rows["cli.nightly"]
    assert "RETIRED: no scheduler process has declared the task for 10 minutes" in out


def test_jobs_schedule_pause_resume_and_trigger_are_audited(pg_dsn: str, clock: FakeClock) -> None:
    _declared(pg_dsn, clock)
    code, out, err = _cli("schedule", "pause", "cli.nightly", "--actor", "alice", "--note", "inc-7", "--dsn", pg_dsn)
    assert code == 0 and "paused" in out, err
    code, out, _ = _cli("schedule", "pause", "cli.nightly", "--actor", "bob", "--dsn", pg_dsn)
    assert code == 5 and "(already)" in out
    code, out, _ = _cli("schedule", "--dsn", pg_dsn, "--json")
    [t] = json.loads(out)["tasks"]
    assert (t["paused"], t["paused_by"], t["pause_note"], t["next_at"]) == (True, "alice", "inc-7", None)
    assert _cli("schedule", "resume", "cli.nightly", "--actor", "alice", "--dsn", pg_dsn)[0] == 0
    code, out, err = _cli("schedule", "trigger", "cli.nightly", "--actor", "carol", "--dsn", pg_dsn, "--json")
    assert code == 0, err
    job_id = json.loads(out)["job_id"]
    eng = Engine(PostgresDriver(pg_dsn))
    row = eng.get(job_id)
    assert row.name == "cli.nightly" and row.queue == "cron" and row.input["trigger"] == "manual"  # type: ignore[index]
    assert row.input["input"] == {"report": "daily"}  # type: ignore[index]
    history = eng._bridge.run(eng.driver.job_history(job_id=job_id))
    assert [(h.kind, h.actor) for h in history] == [("triggered", "carol")]
    eng.close()
    code, _, err = _cli("schedule", "trigger", "cli.nightlyy", "--dsn", pg_dsn)
    assert code == 1 and "X_UNKNOWN_TASK" in err and "did you mean 'cli.nightly'" in err


async def test_schedule_actions_are_refused_in_read_only_mode(clock: FakeClock) -> None:
    eng = connect("memory://", clock=clock)
    s = Scheduler(eng.driver, clock, [nightly], holder="a")
    await s.run_once()
    ro = Schedules(eng, actor="alice", read_only=True)
    for action in (ro.pause, ro.resume, ro.trigger):
        with pytest.raises(JobsError) as err:
            await action("cli.nightly")
        assert err.value.code == "X_READ_ONLY"
    [t] = (await ro.view()).tasks
    assert not t.paused  # nothing was written


async def test_the_embedded_worker_runs_the_scheduler_and_drains_it(clock: FakeClock) -> None:
    eng = connect("memory://", clock=clock)
    async with eng.worker([nightly], concurrency=1) as w:
        assert w.scheduler is not None
        while w.scheduler.last is None:
            await asyncio.sleep(0)
        assert w.scheduler.last.leader
    assert w.scheduler.term is None  # stepped down in the drain
    lead = await eng.driver.schedule_leader_get(leader="scheduler")
    assert lead is not None and lead.lease_until < clock.now()  # released, not left to lapse
    off = eng.worker([nightly], scheduler=False)
    assert off.scheduler is None
