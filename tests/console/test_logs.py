"""Logs of a job, a queue or a worker (l): the database's record of a job (attempts and history)
always; the engine's live events only when the engine runs in the console's process (the demo),
and otherwise a plain sentence saying where those events are instead."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from textual.pilot import Pilot

from console.app import JobsConsole
from console.demo.app import Demo
from console.demo.world import APP1, seeded_engine, seeded_source
from console.events import LogEvent, RecentEvents
from console.screens.logs import ELSEWHERE, LogsScreen
from console.source import Source
from console.widgets.keyed_table import KeyedTable
from engine.runtime import logs as engine_logs
from tests.console.conftest import SMALL, settle

AT = datetime(2026, 1, 1, 11, 59, tzinfo=UTC)


async def keys(pilot: Pilot, *names: str) -> None:
    for k in names:
        await pilot.press(k)
        await settle(pilot)


def body(app: JobsConsole) -> str:
    return "\n".join(str(app.screen.query_one(sel).render()) for sel in ("#logs-record", "#logs-live"))


async def test_a_console_on_a_database_shows_the_job_s_record_and_says_where_live_events_are() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await keys(pilot, "3", "enter", "enter", "l")  # the dead receipt: five attempts
        assert isinstance(app.screen, LogsScreen)
        text = body(app)
        assert "attempt 5 (run 5) dead on w-app1" in text and "attempt 1 (run 1) retried" in text
        assert "X_SMTP_TIMEOUT" in text
        assert " ".join(ELSEWHERE.split()[:6]) in " ".join(text.split())
        await keys(pilot, "escape")
        assert app.screen.SCOPE == "job_detail"


def _events() -> list[LogEvent]:
    return [
        LogEvent(AT, "error", "jobs.attempt.failed", {"job_id": "j-1", "queue": "billing", "error_code": "X_CARD"}),
        LogEvent(AT, "info", "jobs.worker.shed", {"job_id": "j-2", "queue": "integrations", "limit": "rate"}),
        LogEvent(AT, "info", "jobs.worker.draining", {"worker": APP1, "in_flight": 2}),
        LogEvent(AT, "info", "jobs.worker.started", {"worker": "w-app2", "queues": ["billing", "reports"]}),
    ]


async def test_live_events_are_those_about_the_queue_or_worker_asked_for() -> None:
    engine = seeded_engine()
    source = Source(engine, actor="console:test", events=_events)
    app = JobsConsole(source, refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        table = app.screen.query_one(KeyedTable)
        table.move_cursor(row=table.keys.index("billing"))
        await keys(pilot, "l")
        text = body(app)
        assert "jobs.attempt.failed" in text and "jobs.worker.started" in text  # a worker serving it
        assert "jobs.worker.shed" not in text and "runs in this process" in text
        await keys(pilot, "escape", "4", "l")
        text = body(app)
        assert app.screen.worker == APP1 and "jobs.worker.draining" in text and "in_flight=2" in text
        assert "jobs.attempt.failed" not in text and "last heartbeat" in text  # the worker's row
    assert [e.event for e in source.live_events(job_id="j-2") or []] == ["jobs.worker.shed"]
    assert seeded_source().live_events(queue="billing") is None  # no engine in this process


def test_the_demo_keeps_the_engine_s_structured_events_for_the_logs_screen() -> None:
    engine_log = logging.getLogger("jobs")
    level = engine_log.level
    demo = Demo(force_memory=True, traffic=False, pace=0, world=False).start()
    try:
        engine_logs.emit(engine_logs.WORKER_SHED, job_id="j-9", queue="reports", limit="concurrency")
        (event,) = demo.source.live_events(job_id="j-9")
        assert event.event == "jobs.worker.shed" and event.fields["limit"] == "concurrency"
        assert any(isinstance(h, RecentEvents) for h in engine_log.handlers)
    finally:
        demo.stop()
    assert engine_log.level == level and not any(isinstance(h, RecentEvents) for h in engine_log.handlers)


def test_no_kept_event_about_a_job_is_said_as_not_kept_never_as_none_yet() -> None:
    """A job dead a minute ago on a busy demo had its events pushed out of the last 500: "None
    about job … yet" read as if they were still to come."""
    from console.screens.logs import live_text

    said = live_text([], "job 22ff3c763e7c", AT).plain
    assert "None about job 22ff3c763e7c among them: older events are not kept." in said
    assert "yet" not in said
