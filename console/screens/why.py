"""Why is it not running? The causes the engine names for a job or a queue, as sentences with
their details: slot holders and lease ends, the rate bucket and its refill, the pause, the sleep or
event awaited, a stale worker heartbeat, a live duplicate."""

from __future__ import annotations

import json
from datetime import datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from console import palette
from console.format import ago, clean, short_id, stamp, until
from console.messages import WhyLoaded
from console.screens.base import DataScreen
from console.widgets.fresh import update_changed
from engine.projections import Cause, WhyReport

TITLES = {
    "delayed": "Delayed",
    "paused": "Queue paused",
    "slots": "Concurrency slots full",
    "rate_limit": "Rate limit",
    "sleep": "Sleeping",
    "event": "Waiting for an event",
    "stale_worker": "Stale worker",
    "no_worker": "No worker",
    "duplicate": "Live duplicate",
    "running": "Running",
    "dead": "Dead",
    "finished": "Finished",
    "ready": "Ready",
    "backlog": "Backlog",
    "waiting": "Waiting",
}


def slots_sentence(c: Cause, now: datetime) -> str:
    """The slots cause said from its own numbers: the engine's sentence can say "all held" next to
    a smaller count of live holders (a lease lapsed since the job was parked)."""
    held, limit, key = len(c.holders), c.limit or len(c.holders), clean(c.key or "a limit", limit=60)
    ends = [h.lease_until for h in c.holders if h.lease_until is not None]
    first = min(ends) if ends else c.until
    if held >= limit:
        end = (
            f"the first lease ends {until(first, now)} ({stamp(first, now)})"
            if first
            else "no holder's lease end is known"
        )
        return f"All {limit} slots of {key} are held by running jobs; {end}, then a slot frees up."
    free = limit - held
    return (
        f"{held} of {limit} slots of {key} are held now; {free} {'is' if free == 1 else 'are'} free again "
        "(a holder finished or its lease lapsed), so the job takes one when it is next tried."
    )


def cause_text(c: Cause, now: datetime) -> Text:
    t = Text()
    t.append(f"● {TITLES.get(c.kind, clean(c.kind, limit=30))}\n", style="bold")
    t.append("  " + (slots_sentence(c, now) if c.kind == "slots" else clean(c.text, limit=400)))
    facts: list[str] = []
    if c.until and c.kind != "slots":  # the slots sentence names the first lease end
        facts.append(f"until {stamp(c.until, now)} ({until(c.until, now)})")
    if c.by or c.at:
        facts.append(f"by {clean(c.by or '?', limit=30)} {ago(c.at, now)}")
    if c.note:
        facts.append(f"note: {clean(c.note, limit=120)}")
    if c.key:
        facts.append(f"key {clean(c.key, limit=60)}")
    if c.tokens is not None:
        left = "no whole token left" if c.tokens < 1 else f"{int(c.tokens)} tokens left"
        facts.append(left + (f", next token {until(c.refill_at, now)}" if c.refill_at else ""))
    if c.event:
        facts.append(
            f"event {clean(c.event, limit=60)}"
            + (f" matching {clean(json.dumps(c.match, default=str), limit=120)}" if c.match else "")
        )
    if c.worker:
        facts.append(
            f"worker {clean(c.worker, limit=40)}"
            + (f", last heartbeat {ago(c.heartbeat_at, now)}" if c.heartbeat_at else "")
        )
    if c.job_id and c.kind == "duplicate":
        facts.append(f"job {short_id(c.job_id)} ({c.state.value if c.state else '?'})")
    if c.count is not None:
        facts.append(f"{c.count:,} waiting")
    if facts:
        t.append("\n  " + " · ".join(facts), style="dim")
    for h in c.holders[:10]:
        t.append("\n    holder ")
        t.append(short_id(h.job_id) if h.job_id else "—", style="bold")
        end = (
            f"lease ends {until(h.lease_until, now)} ({stamp(h.lease_until, now)})"
            if h.lease_until
            else "lease end unknown"
        )
        t.append(f" on {clean(h.worker or '?', limit=30)}, {end}", style="")
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
        what = f"job {self.job_id}" if self.job_id else f"queue {clean(self.queue or '', limit=40)}"
        yield Static(Text(f"Why is {what} not running?", style="bold"), classes="screen-title", id="why-title")
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
