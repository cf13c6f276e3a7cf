"""Workers: host, pid, queues, slots in use and last heartbeat; stale ones marked. ``d`` asks the
selected (or marked) workers to drain, behind the confirm dialog; the request shows in the
status column until the worker deregisters."""

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


QUEUES_LIMIT = 30
SCROLLBAR = 2  # the table's vertical scrollbar, when the workers outnumber its rows


def queues_limit(rows: list[tuple[Text, ...]], width: int) -> int:
    """How long the queues may be for the host and pid after them to stay whole in ``width``: a
    long list of queues is cut (with "…"), not the host at the screen's edge. Every column is its
    widest cell or its label, and a cell's padding each side."""
    if not width:
        return QUEUES_LIMIT
    others = [i for i, (_, key) in enumerate(COLUMNS) if key not in ("queues", "started")]
    widest = [max([len(COLUMNS[i][0]), *(r[i].cell_len for r in rows)]) for i in others]
    return max(12, min(QUEUES_LIMIT, width - SCROLLBAR - sum(w + 2 for w in widest) - 2))


def worker_row(w: WorkerView, now, queues: int = QUEUES_LIMIT) -> tuple[Text, ...]:  # type: ignore[no-untyped-def]
    status = (
        Text("STALE", style=palette.style("alarm"))
        if w.stale
        else Text("draining", style=palette.style("warn"))
        if w.stopping
        else Text(f"asked to drain by {clean(w.drain_requested_by, limit=16)}", style=palette.style("warn"))
        if w.drain_requested_by
        else Text("live", style=palette.style("ok"))
    )
    return (
        cell(w.id, limit=28, style="bold"),
        status,
        Text(
            ago(w.heartbeat_age),
            style=palette.style("alert") if w.stale else "",
        ),
        Text(f"{w.in_use}/{w.concurrency}", justify="right"),
        cell(", ".join(w.queues), limit=queues),
        cell(w.host, limit=20),
        Text(str(w.pid), justify="right"),
        Text(since(w.started_at, now), style="dim"),
    )


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
        table = KeyedTable(COLUMNS, id="workers")
        table.sort_value = lambda key, col: sort_value(self._by_id()[key], col) if key in self._by_id() else None
        yield table
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
        self.view = view
        now = self.source.now()
        table = self.query_one("#workers", KeyedTable)
        limit = queues_limit([worker_row(w, now) for w in view.workers], table.size.width or self.app.size.width)
        table.sync([(w.id, worker_row(w, now, limit)) for w in view.workers])
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
