"""Overview: one row per queue with counts by state, oldest waiting age (ready or parked), throughput, workers, pause."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.widgets import Static

from console import palette
from console.format import another_terminal, cell, packed
from console.messages import QueuesLoaded, SeriesLoaded
from console.screens.base import DataScreen
from console.screens.flows import Flows
from console.widgets.chart import compact_chart
from console.widgets.fresh import update_changed
from console.widgets.keyed_table import KeyedTable
from console.widgets.sparkline import bucket, spark
from console.widgets.state_bar import StateBar, state_style
from engine.durations import duration
from engine.projections import QueueStats, QueuesView, WorkersView
from engine.series import QueueSeries

AGE_WARN = 60.0  # seconds: the oldest waiting job (ready or parked) has waited longer than this (warn, "!")
AGE_ALERT = 300.0  # and this (alert, "!!")
SPARK = 12
COLUMNS = (
    ("queue", "queue"),
    ("ready", "ready"),
    ("parked", "parked"),
    ("delayed", "delayed"),
    ("running", "running"),
    ("susp.", "suspended"),
    ("dead", "dead"),
    ("done/h", "completed"),
    ("oldest", "oldest"),
    ("per min (1h)", "spark"),
    ("workers", "workers"),
    ("paused", "paused"),
)
# Under NARROW_BELOW columns (an 80x24 terminal) the table drops the sparkline and the paused
# column (a paused queue is marked on its name and named in the totals) and shortens the labels,
# so it fits without scrolling sideways.
NARROW_BELOW = 110
NARROW = (
    ("queue", "queue"),
    ("ready", "ready"),
    ("park.", "parked"),
    ("delay", "delayed"),
    ("run", "running"),
    ("susp.", "suspended"),
    ("dead", "dead"),
    ("done/h", "completed"),
    ("oldest", "oldest"),
    ("wkrs", "workers"),
)
STATES = ("ready", "parked", "delayed", "running", "suspended", "dead")


def age_text(age: float | None) -> Text:
    if age is None:
        return Text("—", style="dim")
    style = palette.style("alert") if age >= AGE_ALERT else (palette.style("warn") if age >= AGE_WARN else "")
    mark = " !!" if age >= AGE_ALERT else (" !" if age >= AGE_WARN else "")  # it reads without colour too
    return Text(duration(age) + mark, style=style)


def count_cell(state: str, count: object) -> Text:
    s = str(count)
    return Text(s, style=palette.style("zero") if s in ("0", "~0") else state_style(state), justify="right")


def queue_cells(q: QueueStats, *, narrow: bool = False) -> dict[str, Text]:
    """Every cell of a queue's row by column key. The slots of the workers serving a queue are
    not a per-queue figure (a worker serving three queues counts in each), so the fleet's slots
    are in the totals line; a queue's own jobs in slots are its running count."""
    name = cell(q.name, limit=16 if narrow else 24, style="bold")
    if narrow and q.paused:
        name.append(" ‖", style=palette.style("flag"))  # the paused column is dropped when narrow
    return {
        "queue": name,
        **{s: count_cell(s, getattr(q, s)) for s in STATES},
        "completed": count_cell("completed", q.completed_last_hour),
        "oldest": age_text(q.oldest_ready_age),
        "spark": Text(spark(bucket(q.throughput, SPARK), SPARK), style=palette.style("chart")),
        "workers": Text(str(q.workers), justify="right", style="" if q.workers else "dim"),
        "paused": Text("PAUSED", style=palette.style("flag")) if q.paused else Text("—", style="dim"),
    }


def queue_row(q: QueueStats, columns: tuple[tuple[str, str], ...] = COLUMNS) -> tuple[Text, ...]:
    cells = queue_cells(q, narrow=columns is NARROW)
    return tuple(cells[key] for _, key in columns)


def fleet_text(workers: WorkersView | None) -> str | None:
    """The fleet's live workers and their slots in use, once for all queues."""
    if workers is None:
        return None
    live = [w for w in workers.workers if not w.stale]
    return (
        f"fleet: {len(live)} worker{'' if len(live) == 1 else 's'}, {sum(w.in_use for w in live)}/{sum(w.concurrency for w in live)} slots busy"
        + (f", {len(workers.workers) - len(live)} stale" if len(live) < len(workers.workers) else "")
    )


class OverviewScreen(DataScreen, Flows):
    SCOPE = "overview"
    MODE = "overview"
    _view: QueuesView | None = None
    _workers: WorkersView | None = None
    _series: QueueSeries | None = None

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        yield Static("Queues", classes="screen-title")
        yield StateBar(id="totals")
        yield KeyedTable(NARROW if self.app.size.width < NARROW_BELOW else COLUMNS, id="queues")
        yield Static("", id="series")
        yield Static("", id="empty", classes="empty")
        yield Static("", id="note", classes="note")
        yield Static("", id="elsewhere", classes="note")
        yield from self.compose_bottom()

    async def fetch(self) -> QueuesLoaded:
        view = await self.source.queues()
        try:
            workers: WorkersView | None = await self.source.workers()
        except Exception:  # the queues are what this screen is for; the fleet line is extra
            workers = None
        return QueuesLoaded(view, workers)

    def _columns(self) -> tuple[tuple[str, str], ...]:
        return NARROW if self.size.width < NARROW_BELOW else COLUMNS

    def on_resize(self) -> None:
        # Redrawn at the new width: the totals break their lines between two counts to fit it.
        self.query_one("#queues", KeyedTable).set_columns(self._columns())
        if self._view is not None:
            self.on_queues_loaded(QueuesLoaded(self._view, self._workers))
        self._draw_series()

    # --- the selected queue's compact chart ------------------------------------------------------

    @work(exclusive=True, group="series", exit_on_error=False)
    async def _load_series(self, queue: str) -> None:
        try:
            series = await self.source.queue_series(queue)
        except Exception:  # the chart is extra: a failing database is the refresh's banner to raise
            return
        self.post_message(SeriesLoaded(series))

    def on_series_loaded(self, message: SeriesLoaded) -> None:
        self._series = message.data
        self._draw_series()

    def _draw_series(self) -> None:
        if not self.is_mounted:
            return
        series = self._series if self._series is not None and self._series.queue == self._selected() else None
        update_changed(self.query_one("#series", Static), compact_chart(series, self.size.width - 2))

    def on_data_table_row_highlighted(self, event: KeyedTable.RowHighlighted) -> None:
        queue = self._selected()
        if queue is not None and (self._series is None or self._series.queue != queue):
            self._draw_series()
            self._load_series(queue)

    def action_logs(self) -> None:
        queue = self._selected()
        if queue:
            self.navigate("logs", queue=queue)

    def action_chart(self) -> None:
        queue = self._selected()
        if queue:
            self.navigate("chart", queue=queue)

    def on_queues_loaded(self, message: QueuesLoaded) -> None:
        view: QueuesView = message.data
        self._view, self._workers = view, message.workers
        table = self.query_one("#queues", KeyedTable)
        columns = self._columns()
        table.set_columns(columns)
        first = not table.keys
        table.sync([(q.name, queue_row(q, columns)) for q in view.queues])
        if first and self.focus_queue in table.keys:
            table.move_cursor(row=table.keys.index(self.focus_queue), animate=False)
        totals = [(s, sum(getattr(q, s).value for q in view.queues)) for s in STATES]
        totals.append(("completed/h", sum(q.completed_last_hour.value for q in view.queues)))
        paused = [q.name for q in view.queues if q.paused]
        notes = [f"paused: {', '.join(paused)}"] if paused else []
        fleet = fleet_text(message.workers)
        if fleet:
            notes.append(fleet)
        self.query_one("#totals", StateBar).show(totals, notes=notes)
        empty = self.query_one("#empty", Static)
        empty.display = not view.queues
        update_changed(
            empty, "No queues yet: nothing has been enqueued. Jobs appear here as soon as an app enqueues one."
        )
        notes = []
        if view.estimated:
            notes.append("~ an estimate, ≥ a capped count: large tables are not counted exactly")
        notes += [f"oldest: ! past {duration(AGE_WARN)}, !! past {duration(AGE_ALERT)}", "Enter: jobs", "y: why"]
        notes.append("g: chart")
        width = max(0, self.app.size.width - 2)  # lines break between two notes, never inside one
        update_changed(self.query_one("#note", Static), packed(notes, width, style="dim"))
        dsn = getattr(self.app, "cli_dsn", None)  # the demo's: another terminal can reach it
        elsewhere = self.query_one("#elsewhere", Static)
        elsewhere.display = dsn is not None
        update_changed(elsewhere, packed(another_terminal(dsn), width, sep=" ") if dsn else "")
        queue = self._selected()
        if queue is not None:
            self._load_series(queue)

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
            stats = next((q for q in self._view.queues if q.name == queue), None)
            self.toggle_pause(queue, stats is not None and stats.paused, stats)

    def on_data_table_row_selected(self, event: KeyedTable.RowSelected) -> None:
        event.stop()
        self.action_open_queue()
