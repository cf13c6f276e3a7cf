"""Overview: one row per queue with counts by state, oldest-ready age, throughput, workers, pause."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from console.format import cell, duration
from console.messages import QueuesLoaded
from console.screens.base import DataScreen
from console.screens.flows import Flows
from console.widgets.keyed_table import KeyedTable
from console.widgets.sparkline import bucket, spark
from console.widgets.state_bar import STATE_STYLE, StateBar
from engine.projections import QueueStats, QueuesView

AGE_WARN = 60.0  # seconds: the oldest ready job has waited longer than this (yellow)
AGE_ALERT = 300.0  # and this (red)
SPARK = 12
COLUMNS = (
    ("queue", "queue"), ("ready", "ready"), ("parked", "parked"), ("delayed", "delayed"),
    ("running", "running"), ("susp.", "suspended"), ("dead", "dead"), ("done/h", "completed"),
    ("oldest", "oldest"), ("per min (1h)", "spark"), ("workers", "workers"), ("slots", "slots"), ("paused", "paused"),
)
STATES = ("ready", "parked", "delayed", "running", "suspended", "dead")


def age_text(age: float | None) -> Text:
    if age is None:
        return Text("—", style="dim")
    style = "bold red" if age >= AGE_ALERT else ("yellow" if age >= AGE_WARN else "")
    mark = " !" if age >= AGE_WARN else ""  # the warning reads without colour too
    return Text(duration(age) + mark, style=style)


def count_cell(state: str, count: object) -> Text:
    s = str(count)
    return Text(s, style="dim" if s in ("0", "~0") else STATE_STYLE.get(state, ""), justify="right")


def queue_row(q: QueueStats) -> tuple[Text, ...]:
    return (
        cell(q.name, limit=24, style="bold"),
        *(count_cell(s, getattr(q, s)) for s in STATES),
        count_cell("completed", q.completed_last_hour),
        age_text(q.oldest_ready_age),
        Text(spark(bucket(q.throughput, SPARK), SPARK), style="green"),
        Text(str(q.workers), justify="right", style="" if q.workers else "dim"),
        Text(f"{q.slots_in_use}/{q.slots_total}", justify="right"),
        Text("PAUSED", style="bold reverse yellow") if q.paused else Text("—", style="dim"),
    )


class OverviewScreen(DataScreen, Flows):
    SCOPE = "overview"
    _view: QueuesView | None = None

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        yield Static("Queues", classes="screen-title")
        yield StateBar(id="totals")
        yield KeyedTable(COLUMNS, id="queues")
        yield Static("", id="empty", classes="empty")
        yield Static("", id="note", classes="note")
        yield from self.compose_bottom()

    async def fetch(self) -> QueuesLoaded:
        return QueuesLoaded(await self.source.queues())

    def on_queues_loaded(self, message: QueuesLoaded) -> None:
        view: QueuesView = message.data
        self._view = view
        table = self.query_one("#queues", KeyedTable)
        first = not table.keys
        table.sync([(q.name, queue_row(q)) for q in view.queues])
        if first and self.console.focus_queue in table.keys:
            table.move_cursor(row=table.keys.index(self.console.focus_queue), animate=False)
        totals = [(s, sum(getattr(q, s).value for q in view.queues)) for s in STATES]
        totals.append(("completed/h", sum(q.completed_last_hour.value for q in view.queues)))
        paused = [q.name for q in view.queues if q.paused]
        self.query_one("#totals", StateBar).show(totals, note=f"paused: {', '.join(paused)}" if paused else None)
        empty = self.query_one("#empty", Static)
        empty.display = not view.queues
        empty.update("No queues yet: nothing has been enqueued. Jobs appear here as soon as an app enqueues one.")
        notes = []
        if view.estimated:
            notes.append("~ an estimate, ≥ a capped count: large tables are not counted exactly")
        notes.append(f"oldest: ! past {duration(AGE_WARN)}, red past {duration(AGE_ALERT)} · Enter: jobs of queue · y: why")
        self.query_one("#note", Static).update(Text(" · ".join(notes), style="dim"))

    def _selected(self) -> str | None:
        return self.query_one("#queues", KeyedTable).selected_key

    def action_open_queue(self) -> None:
        queue = self._selected()
        if queue:
            self.open_jobs(queue=queue)

    def action_why_queue(self) -> None:
        queue = self._selected()
        if queue:
            self.open_why_queue(queue)

    def action_toggle_pause(self) -> None:
        queue = self._selected()
        if queue and self._view is not None:
            paused = next((q.paused for q in self._view.queues if q.name == queue), False)
            self.toggle_pause(queue, paused)

    def on_data_table_row_selected(self, event: KeyedTable.RowSelected) -> None:
        event.stop()
        self.action_open_queue()
