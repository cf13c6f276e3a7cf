"""Workers: host, pid, queues, slots in use and last heartbeat; stale ones marked."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from console.format import ago, cell, clean, duration
from console.messages import WorkersLoaded
from console.screens.base import DataScreen
from console.widgets.fresh import update_changed
from console.widgets.keyed_table import KeyedTable
from engine.projections import WorkersView, WorkerView

COLUMNS = (
    ("worker", "id"),
    ("host", "host"),
    ("pid", "pid"),
    ("queues", "queues"),
    ("slots", "slots"),
    ("started", "started"),
    ("heartbeat", "heartbeat"),
    ("status", "status"),
)


def worker_row(w: WorkerView, now) -> tuple[Text, ...]:  # type: ignore[no-untyped-def]
    status = (
        Text("STALE", style="bold reverse red")
        if w.stale
        else Text("stopping", style="yellow")
        if w.stopping
        else Text("live", style="green")
    )
    return (
        cell(w.id, limit=28, style="bold"),
        cell(w.host, limit=20),
        Text(str(w.pid), justify="right"),
        cell(", ".join(w.queues), limit=30),
        Text(f"{w.in_use}/{w.concurrency}", justify="right"),
        Text(ago(w.started_at, now), style="dim"),
        Text("now" if w.heartbeat_age < 1 else f"{duration(w.heartbeat_age)} ago", style="bold red" if w.stale else ""),
        status,
    )


class WorkersScreen(DataScreen):
    SCOPE = "workers"
    MODE = "workers"

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        yield Static("Workers", classes="screen-title", id="workers-title")
        yield KeyedTable(COLUMNS, id="workers")
        yield Static("", id="empty", classes="empty")
        yield Static("", id="note", classes="note")
        yield from self.compose_bottom()

    def on_mount(self) -> None:
        self.query_one("#workers", KeyedTable).focus()
        super().on_mount()

    async def fetch(self) -> WorkersLoaded:
        return WorkersLoaded(await self.source.workers())

    def on_workers_loaded(self, message: WorkersLoaded) -> None:
        view: WorkersView = message.data
        now = self.source.now()
        self.query_one("#workers", KeyedTable).sync([(w.id, worker_row(w, now)) for w in view.workers])
        stale = sum(1 for w in view.workers if w.stale)
        title = Text("Workers", style="bold")
        title.append(f"  {len(view.workers)} registered" + (f", {stale} stale" if stale else ""))
        update_changed(self.query_one("#workers-title", Static), title)
        empty = self.query_one("#empty", Static)
        empty.display = not view.workers
        update_changed(
            empty, "No worker has registered: nothing is claiming jobs. Start one with `jobs worker MODULE`."
        )
        update_changed(
            self.query_one("#note", Static),
            Text(f"stale: no heartbeat for {clean(duration(view.stale_after))}", style="dim"),
        )
