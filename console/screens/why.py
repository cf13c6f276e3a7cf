"""Why is it not running? The causes the engine names for a job or a queue, as its sentences with
their details: slot holders (running ones renew their slots), the rate bucket, the limit that shed
a job, the pause, the sleep or event awaited (its next check and its timeout apart), a stale
worker heartbeat, a live duplicate; a queue nothing holds back says so."""

from __future__ import annotations

import json
from datetime import datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from console import palette
from console.format import clean, relative_at, short_id, since, stamp
from console.messages import WhyLoaded
from console.screens.base import DataScreen
from console.widgets.fresh import update_changed
from engine.projections import Cause, SlotHolder, WhyReport
from engine.types import JobState

TITLES = {
    "delayed": "Delayed",
    "paused": "Queue paused",
    "slots": "Concurrency slots",
    "rate_limit": "Rate limit",
    "limit": "Shed by a limit",
    "sleep": "Sleeping",
    "event": "Waiting for an event",
    "jobs": "Waiting for jobs",
    "awaited": "Awaited by a fan-in",
    "stale_worker": "Stale worker",
    "no_worker": "No worker",
    "duplicate": "Live duplicate",
    "running": "Running",
    "dead": "Dead",
    "finished": "Finished",
    "ready": "Ready",
    "backlog": "Backlog",
    "waiting": "Waiting",
    "clear": "Nothing holds it back",
}
# What a cause's ``until`` is, said per kind (an event wait's is its timeout, not its next check).
UNTIL = {
    "event": "times out",
    "jobs": "times out",
    "sleep": "wakes",
    "delayed": "runs",
    "limit": "tried again",
    "running": "lease until",
}


def title(c: Cause) -> str:
    """The cause's heading, naming the limit it is about (a limit cause says which limit)."""
    base = TITLES.get(c.kind, clean(c.kind, limit=30))
    if c.kind == "limit" and c.limit_kind:
        base = f"Shed by the {c.limit_kind} limit"
    if c.kind == "slots" and c.limit is not None and len(c.holders) >= c.limit:
        base = "Concurrency slots full"
    if c.key and c.kind in ("limit", "slots", "rate_limit"):
        base += f" · {clean(c.key, limit=50)}"
    if c.count is not None and c.kind in ("delayed", "sleep", "event", "jobs", "limit"):
        base += f" ({c.count:,} job{'s' if c.count != 1 else ''})"
    return base


def holder_text(h: SlotHolder, now: datetime) -> Text:
    t = Text("\n    holder ")
    t.append(short_id(h.job_id) if h.job_id else "—", style="bold")
    t.append(f" on {clean(h.worker or '?', limit=30)}, ")
    if h.state is JobState.RUNNING:
        started = f" since {stamp(h.started_at, now)} ({since(h.started_at, now)})" if h.started_at else ""
        t.append(f"running{started}; its slot is renewed while it runs")
    else:
        what = h.state.value if h.state else "gone"
        end = (
            f"its slot frees {relative_at(h.lease_until, now)}" if h.lease_until else "its slot's lease end is unknown"
        )
        t.append(f"{what}, not running; {end}")
    return t


def cause_text(c: Cause, now: datetime) -> Text:
    t = Text()
    t.append(f"● {title(c)}\n", style="bold")
    t.append("  " + clean(c.text, limit=400))
    if c.fix:
        t.append("\n  fix: ", style="dim")
        t.append(clean(c.fix, limit=160), style="bold")
    facts: list[str] = []
    if c.kind == "event" and c.next_check is not None:
        facts.append(f"next check {stamp(c.next_check, now)} ({relative_at(c.next_check, now)})")
    if c.kind == "event" and c.until is None and c.count is None:
        facts.append("no timeout")
    if c.until and c.kind != "slots":
        facts.append(f"{UNTIL.get(c.kind, 'until')} {stamp(c.until, now)} ({relative_at(c.until, now)})")
    if c.by or (c.at and c.kind == "paused"):
        facts.append(f"by {clean(c.by or '?', limit=30)} {since(c.at, now)}")
    if c.note:
        facts.append(f"note: {clean(c.note, limit=120)}")
    if c.tokens is not None:
        left = "no whole token" if c.tokens < 1 else f"{int(c.tokens)} tokens"
        facts.append(left + (f" at {stamp(c.at, now)}" if c.at else ""))
    if c.event:
        facts.append(
            f"event {clean(c.event, limit=60)}"
            + (f" matching {clean(json.dumps(c.match, default=str), limit=120)}" if c.match else "")
        )
    if c.worker:
        facts.append(
            f"worker {clean(c.worker, limit=40)}"
            + (f", last heartbeat {since(c.heartbeat_at, now)}" if c.heartbeat_at else "")
        )
    if c.job_id and c.kind == "duplicate":
        facts.append(f"job {short_id(c.job_id)} ({c.state.value if c.state else '?'})")
    if c.count is not None and c.kind == "backlog":
        facts.append(f"{c.count:,} waiting")
    if facts:
        t.append("\n  " + " · ".join(facts), style="dim")
    for h in c.holders[:10]:
        t.append_text(holder_text(h, now))
    if len(c.holders) > 10:
        t.append(f"\n    … {len(c.holders) - 10} more holders", style="dim")
    return t


def report_text(r: WhyReport, now: datetime) -> Text:
    t = Text()
    if not r.causes:
        t.append("Nothing is holding it back.", style=palette.style("ok"))
        return t
    for i, c in enumerate(r.causes):
        if i:
            t.append("\n\n")
        t.append_text(cause_text(c, now))
    return t


class WhyScreen(DataScreen):
    SCOPE = "why"

    def crumb(self) -> str:
        return "why"

    def __init__(self, *, job_id: str | None = None, queue: str | None = None) -> None:
        super().__init__()
        self.job_id, self.queue = job_id, queue

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        # A queue runs while it has a backlog: what is asked of it is why the backlog does not drain.
        said = (
            f"job {self.job_id} not running"
            if self.job_id
            else f"queue {clean(self.queue or '', limit=40)} not draining"
        )
        yield Static(Text(f"Why is {said}?", style="bold"), classes="screen-title", id="why-title")
        with VerticalScroll(id="why-body"):
            yield Static("", id="causes")
        yield from self.compose_bottom()

    def on_mount(self) -> None:
        self.query_one("#why-body", VerticalScroll).focus()
        super().on_mount()

    async def fetch(self) -> WhyLoaded:
        if self.job_id:
            return WhyLoaded(await self.source.why_job(self.job_id))
        return WhyLoaded(await self.source.why_queue(self.queue or ""))

    def on_why_loaded(self, message: WhyLoaded) -> None:
        r: WhyReport = message.data
        if r.state is not None:
            update_changed(
                self.query_one("#why-title", Static),
                Text.assemble(("Why is job ", "bold"), (short_id(r.target), "bold"), (f" {r.state.value}?", "bold")),
            )
        update_changed(self.query_one("#causes", Static), report_text(r, self.source.now()))
