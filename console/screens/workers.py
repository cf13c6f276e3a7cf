"""Workers: host, pid, queues, slots in use and last heartbeat; stale ones marked. ``d`` asks the
selected (or marked) workers to drain, behind the confirm dialog; the request shows in the
status column until the worker deregisters. The selected worker's line under the table says its
host, pid, every queue and who asked it to drain, which a narrow table leaves out."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from console import palette
from console.format import ago, cell, clean, since
from console.messages import WorkersLoaded
from console.screens.base import DataScreen
from console.screens.flows import Flows, drain_text, drain_what, unserved_after_drain
from console.screens.flows_bulk import Item
from console.widgets.fresh import update_changed
from console.widgets.keyed_table import KeyedTable
from engine.durations import duration
from engine.projections import WorkersView, WorkerView

# The verdict first: at 80 columns a stale worker's status and heartbeat show without scrolling
# sideways; the long, variable queues and the host's facts come after them.
COLUMNS = (
    ("worker", "id"),
    ("status", "status"),
    ("heartbeat", "heartbeat"),
    ("slots", "slots"),
    ("queues", "queues"),
    ("host", "host"),
    ("pid", "pid"),
    ("started", "started"),
)
# Under NARROW_BELOW columns (80x24) the table keeps what an on-call reads a worker by (its
# status, heartbeat, slots, when it started) and ends on its queues, cut to what is left; the
# host and pid, the queues whole and who asked a drain are on the selected worker's line below.
NARROW_BELOW = 100
NARROW = (
    ("worker", "id"),
    ("status", "status"),
    ("heartbeat", "heartbeat"),
    ("slots", "slots"),
    ("started", "started"),
    ("queues", "queues"),
)

QUEUES_LIMIT, NARROW_QUEUES = 30, 8
ID_LIMIT, NARROW_ID = 28, 20
SCROLLBAR = 2  # the table's vertical scrollbar, when the workers outnumber its rows


def queues_limit(rows: list[tuple[Text, ...]], width: int, columns: tuple[tuple[str, str], ...] = COLUMNS) -> int:
    """How long the queues may be for every other column of ``columns`` to stay whole in
    ``width``: a long list of queues is cut (with "…"), not the column at the screen's edge.
    Every column is its widest cell or its label, and a cell's padding each side. The wide table
    leaves its last column (started) to the screen's edge."""
    if not width:
        return QUEUES_LIMIT
    narrow = columns is NARROW
    skipped = ("queues",) if narrow else ("queues", "started")
    others = [i for i, (_, key) in enumerate(columns) if key not in skipped]
    widest = [max([len(columns[i][0]), *(r[i].cell_len for r in rows)]) for i in others]
    floor = NARROW_QUEUES if narrow else 12
    return max(floor, min(QUEUES_LIMIT, width - SCROLLBAR - sum(w + 2 for w in widest) - 2))


def worker_row(  # type: ignore[no-untyped-def]
    w: WorkerView, now, queues: int = QUEUES_LIMIT, columns: tuple[tuple[str, str], ...] = COLUMNS
) -> tuple[Text, ...]:
    narrow = columns is NARROW
    drain = "asked to drain" if narrow else f"asked to drain by {clean(w.drain_requested_by, limit=16)}"
    status = (
        Text("STALE", style=palette.style("alarm"))
        if w.stale
        else Text("draining", style=palette.style("warn"))
        if w.stopping
        else Text(drain, style=palette.style("warn"))
        if w.drain_requested_by
        else Text("live", style=palette.style("ok"))
    )
    cells = {
        "id": cell(w.id, limit=NARROW_ID if narrow else ID_LIMIT, style="bold"),
        "status": status,
        "heartbeat": Text(ago(w.heartbeat_age), style=palette.style("alert") if w.stale else ""),
        "slots": Text(f"{w.in_use}/{w.concurrency}", justify="right"),
        "queues": cell(", ".join(w.queues), limit=queues),
        "host": cell(w.host, limit=20),
        "pid": Text(str(w.pid), justify="right"),
        "started": Text(since(w.started_at, now), style="dim"),
    }
    return tuple(cells[key] for _, key in columns)


def detail_text(w: WorkerView, now) -> Text:  # type: ignore[no-untyped-def]
    """The selected worker in words: its host and pid, every queue, when it started, who asked it
    to drain."""
    out = Text(clean(w.id, limit=40), style="bold")
    out.append(f"  {clean(w.host, limit=30)} pid {w.pid}, started {since(w.started_at, now)}")
    out.append(f"\nqueues {clean(', '.join(w.queues), limit=150)}", style="dim")
    if w.drain_requested_by and not w.stopping:
        out.append(f"\nasked to drain by {clean(w.drain_requested_by, limit=40)}", style=palette.style("warn"))
    return out


def sort_value(w: WorkerView, column: str) -> object:
    return {
        "pid": w.pid,
        "slots": w.in_use,
        "started": w.started_at.timestamp(),
        "heartbeat": w.heartbeat_age,
    }.get(column)


def worker_facts(w: WorkerView) -> str:
    return f"{w.host} pid {w.pid}, {w.in_use}/{w.concurrency} slots busy, queues {', '.join(w.queues)}"


class WorkersScreen(DataScreen, Flows):
    SCOPE = "workers"
    MODE = "workers"
    view: WorkersView | None = None

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        yield Static("Workers", classes="screen-title", id="workers-title")
        table = KeyedTable(self._columns(), id="workers")
        table.sort_value = lambda key, col: sort_value(self._by_id()[key], col) if key in self._by_id() else None
        yield table
        yield Static("", id="worker", classes="note")
        yield Static("", id="empty", classes="empty")
        yield Static("", id="note", classes="note")
        yield from self.compose_bottom()

    def on_mount(self) -> None:
        self.query_one("#workers", KeyedTable).focus()
        super().on_mount()

    async def fetch(self) -> WorkersLoaded:
        return WorkersLoaded(await self.source.workers())

    def _columns(self) -> tuple[tuple[str, str], ...]:
        return NARROW if (self.size.width or self.app.size.width) < NARROW_BELOW else COLUMNS

    def on_resize(self) -> None:
        if self.view is not None:  # refilled at the new width, in the columns it affords
            self.on_workers_loaded(WorkersLoaded(self.view))

    def on_workers_loaded(self, message: WorkersLoaded) -> None:
        view: WorkersView = message.data
        self.view = view
        now = self.source.now()
        table = self.query_one("#workers", KeyedTable)
        columns = self._columns()
        table.set_columns(columns)
        rows = [worker_row(w, now, columns=columns) for w in view.workers]
        limit = queues_limit(rows, self.size.width or self.app.size.width, columns)
        table.sync([(w.id, worker_row(w, now, limit, columns)) for w in view.workers])
        self._show_detail()
        stale = sum(1 for w in view.workers if w.stale)
        title = Text("Workers", style="bold")
        title.append(f"  {len(view.workers)} registered" + (f", {stale} stale" if stale else ""))
        update_changed(self.query_one("#workers-title", Static), title)
        empty = self.query_one("#empty", Static)
        empty.display = not view.workers
        update_changed(
            empty, "No worker has registered: nothing is claiming jobs. Start one with `jobsctl worker MODULE`."
        )
        update_changed(
            self.query_one("#note", Static),
            Text(
                f"stale: no heartbeat for {clean(duration(view.stale_after))}, or for three of its own heartbeats if longer",
                style="dim",
            ),
        )

    def _show_detail(self) -> None:
        w = self._by_id().get(self.query_one("#workers", KeyedTable).selected_key or "")
        shown = self.query_one("#worker", Static)
        shown.display = w is not None
        update_changed(shown, Text("") if w is None else detail_text(w, self.source.now()))

    def on_data_table_row_highlighted(self, event: KeyedTable.RowHighlighted) -> None:
        event.stop()
        if self.view is not None:
            self._show_detail()

    def _by_id(self) -> dict[str, WorkerView]:
        return {w.id: w for w in self.view.workers} if self.view is not None else {}

    def action_logs(self) -> None:
        key = self.query_one("#workers", KeyedTable).selected_key
        if key:
            self.navigate("logs", worker=key)

    def action_drain(self) -> None:
        workers = self._by_id()
        table = self.query_one("#workers", KeyedTable)
        chosen = [workers[k] for k in table.marked_keys() if k in workers]
        everyone = list(workers.values())
        if not chosen:
            key = table.selected_key
            if key is None or key not in workers:
                return
            w = workers[key]
            self.drain_worker(key, worker_facts(w), unserved_after_drain([w], everyone), [w] if w.stale else [])
            return

        def item(w: WorkerView) -> Item:
            async def run(note: str | None) -> str | None:
                return drain_text(await self.source.drain_worker(w.id, note=note))

            return Item(w.id, f"{w.id}  {worker_facts(w)}", run)

        what = drain_what(unserved_after_drain(chosen, everyone), [w for w in chosen if w.stale])
        self.marked_flow("Drain", "worker", [item(w) for w in chosen], [], what)
