"""Logs of a job, a queue or a worker: what the console can honestly show.

Live events are the engine's structured log events (jobs.attempt.failed, jobs.worker.shed, ...),
and only an engine running in this process has them to give (the demo keeps its latest in
memory; console/events.py). On a DSN the workers run elsewhere and their events go to their own
logs, which the screen says instead of showing nothing. What the database keeps is shown beside
them: a job's history (lifecycle facts and operator actions) and its attempts; a worker's row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from console import palette
from console.events import KEPT, LogEvent
from console.format import clean, short_id, since, stamp
from console.messages import Loaded
from console.screens.base import DataScreen
from console.widgets.fresh import update_changed
from engine.projections import JobDetail, WorkerView

SHOWN = 200  # live events shown, newest first (the latest on screen at once)
ELSEWHERE = (
    "This console runs no engine: the workers' events go to their own logs (`jobsctl worker` writes "
    "one JSON line per event to stderr: ship them to your log store). The database keeps none."
)


class LogsLoaded(Loaded):
    pass


@dataclass(frozen=True)
class Logs:
    live: list[LogEvent] | None  # None: no engine runs in this process
    job: JobDetail | None = None
    worker: WorkerView | None = None


def event_line(e: LogEvent, now: datetime) -> Text:
    style = palette.style("error") if e.level == "error" else palette.style("warn") if e.level == "warning" else ""
    t = Text()
    t.append(f"{stamp(e.at, now)} ", style="dim")
    t.append(f"{clean(e.level, limit=7):<7} ", style=style)
    t.append(clean(e.event, limit=40), style="bold")
    rest = {k: v for k, v in e.fields.items() if k not in ("job_id",)}
    if "job_id" in e.fields:
        t.append(f" job {short_id(str(e.fields['job_id']))}")
    for k, v in rest.items():
        value = v if isinstance(v, str) else json.dumps(v, default=str)
        t.append(f" {clean(k, limit=20)}=", style="dim")
        t.append(clean(value, limit=120))
    return t


def live_text(live: list[LogEvent] | None, what: str, now: datetime) -> Text:
    t = Text("Live events", style="bold")
    if live is None:
        t.append("\n" + ELSEWHERE, style="italic")
        return t
    t.append(
        f"  the engine runs in this process: of its last {KEPT} events, those about {what}, newest first", style="dim"
    )
    if not live:  # not "yet": those of a job that died minutes ago may have left the last KEPT
        t.append(f"\nNone about {what} among them: older events are not kept.", style="dim italic")
    for e in reversed(live[-SHOWN:]):
        t.append("\n")
        t.append_text(event_line(e, now))
    return t


def job_record(d: JobDetail, now: datetime) -> Text:
    """The job's attempts and history from the database, merged, newest first."""
    rows: list[tuple[datetime, Text]] = []
    for a in d.attempts:
        line = Text()
        line.append(f"attempt {a.attempt} (run {a.run}) ", style="bold")
        line.append(f"{clean(a.outcome, limit=12)} on {clean(a.worker, limit=24)}")
        if a.error_code or a.error:
            line.append("  ")
            line.append(clean(a.error_code or a.error or "", limit=120), style=palette.style("error"))
        rows.append((a.finished_at, line))
    for h in d.history:
        line = Text()
        line.append(clean(h.kind, limit=20), style="bold")
        line.append(f" by {clean(h.actor, limit=30)}" if h.actor else "")
        if h.note:
            line.append(f"  note: {clean(h.note, limit=120)}", style="italic")
        rows.append((h.at, line))
    t = Text("From the database", style="bold")
    t.append("  the job's attempts and history, newest first", style="dim")
    if not rows:
        t.append("\nNo attempt and no history yet.", style="dim italic")
    for at, line in sorted(rows, key=lambda r: r[0], reverse=True):
        t.append(f"\n{stamp(at, now)} ", style="dim")
        t.append_text(line)
    return t


def worker_record(w: WorkerView | None, now: datetime) -> Text:
    t = Text("From the database", style="bold")
    if w is None:
        t.append("\nThis worker is no longer registered (it stopped, or its row was reaped).", style="dim italic")
        return t
    t.append(f"\nstarted {since(w.started_at, now)}, last heartbeat {since(w.heartbeat_at, now)}")
    t.append(f", {w.in_use}/{w.concurrency} slots busy, queues {clean(', '.join(w.queues), limit=80)}")
    if w.drain_requested_by:
        t.append(f"\nasked to drain by {clean(w.drain_requested_by, limit=30)} {since(w.drain_requested_at, now)}")
    return t


class LogsScreen(DataScreen):
    SCOPE = "logs"

    def __init__(self, *, job_id: str | None = None, queue: str | None = None, worker: str | None = None) -> None:
        super().__init__()
        self.job_id, self.queue, self.worker = job_id, queue, worker

    def what(self) -> str:
        if self.job_id:
            return f"job {short_id(self.job_id)}"
        if self.worker:
            return f"worker {clean(self.worker, limit=30)}"
        return f"queue {clean(self.queue or '', limit=30)}"

    def crumb(self) -> str:
        return "logs"  # the title names whose: the breadcrumb stays short enough for 80 columns

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        yield Static(Text(f"Logs of {self.what()}", style="bold"), classes="screen-title")
        with VerticalScroll(id="logs-body"):
            yield Static("", id="logs-record")
            yield Static("", id="logs-live", classes="json")
        yield from self.compose_bottom()

    def on_mount(self) -> None:
        self.query_one("#logs-body", VerticalScroll).focus()
        super().on_mount()

    async def fetch(self) -> LogsLoaded:
        live = self.source.live_events(job_id=self.job_id, queue=self.queue, worker=self.worker)
        if self.job_id:
            return LogsLoaded(Logs(live, job=await self.source.job(self.job_id)))
        if self.worker:
            view = await self.source.workers()
            return LogsLoaded(Logs(live, worker=next((w for w in view.workers if w.id == self.worker), None)))
        return LogsLoaded(Logs(live))

    def on_logs_loaded(self, message: LogsLoaded) -> None:
        logs: Logs = message.data
        now = self.source.now()
        record: Any
        if self.job_id and logs.job is not None:
            record = job_record(logs.job, now)
        elif self.worker:
            record = worker_record(logs.worker, now)
        else:
            record = Text(
                "The database keeps no log per queue: each job's attempts and history are on its own logs "
                "(l on the Jobs list).",
                style="dim italic",
            )
        update_changed(self.query_one("#logs-record", Static), record)
        update_changed(self.query_one("#logs-live", Static), live_text(logs.live, self.what(), now))
