"""Backfills: every declared backfill in each environment it names (and this console's), with its
status there (pending, running, completed, failed, stalled), the live progress of a running pass
(rows swept and remaining, batches a second, ETA, a bar), the gate a write pass would meet now,
and the selected one's ledger history. d starts a dry run, w a write pass, f forces a rerun of an
applied one, x continues a failed, cancelled or stalled pass from its batch, c cancels a running
one, each behind the confirm dialog; Enter opens the selected pass's job."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from console.format import clean, packed
from console.messages import BackfillsLoaded
from console.screens.backfill_flows import BackfillFlows, retryable
from console.screens.backfill_text import (
    gate_cause,
    gate_text,
    history_cells,
    own_live,
    progress_text,
    row_cells,
)
from console.screens.base import DataScreen
from console.screens.flows import Flows
from console.widgets.fresh import update_changed
from console.widgets.keyed_table import KeyedTable

COLUMNS = (
    ("backfill", "name"),
    ("env", "env"),
    ("status", "status"),
    ("progress", "bar"),
    ("swept", "swept"),
    ("remaining", "remaining"),
    ("batch/s", "rate"),
    ("ETA", "eta"),
    ("gate", "gate"),
)
# Under NARROW_BELOW columns (80x24) the table keeps what tells the rows apart and what is wrong
# (status, how far, the gate); the selected row's panel below has every number. Under SHORT_BELOW
# rows the panel drops the declaration line and the gate shows its code and fix first.
NARROW_BELOW, SHORT_BELOW = 110, 30
NARROW = (
    ("backfill", "name"),
    ("env", "env"),
    ("status", "status"),
    ("done", "done"),
    ("ETA", "eta"),
    ("gate", "gate"),
)
HISTORY = (
    ("run", "run"),
    ("started", "started"),
    ("by", "by"),
    ("mode", "mode"),
    ("outcome", "outcome"),
    ("swept", "swept"),
    ("batches", "batches"),
    ("took", "took"),
    ("error", "error"),
)
NARROW_HISTORY = HISTORY[:7]  # the error of the latest pass is in the panel above
NOTHING_DECLARED = (
    "No backfill is declared for this console. Backfills live in the application's code: open the "
    "console with --app MODULE (or $JOBS_APP), the module `jobsctl backfill --app` reads."
)


def _pick(cells: dict[str, Text], columns: tuple[tuple[str, str], ...]) -> tuple[Text, ...]:
    return tuple(cells[key] for _, key in columns)


def key_of(v: Any) -> str:
    return f"{v.name}@{v.environment}"


def title_text(board: Any, width: int = 0) -> Text:
    """The counts, the environment this console acts in and the app declaring them: past
    ``width`` cells a line breaks between two of them, never inside one."""
    t = Text("Backfills", style="bold")
    counts: dict[str, int] = {}
    for v in board.rows:
        counts[v.status] = counts.get(v.status, 0) + 1
    t.append(f"  {board.declared} declared")
    for status in ("running", "pending", "failed", "stalled"):
        if counts.get(status):
            t.append(f", {counts[status]} {status}", style="bold" if status != "pending" else "")
    parts = [t, Text(f"this console acts in {clean(board.environment, limit=20)}", style="dim")]
    if board.app:
        parts.append(Text(f"app {clean(board.app, limit=40)}", style="dim"))
    return packed(parts, width)


def hint_text(v: Any) -> Text:
    """What Enter does on the selected row: open its latest pass's job, once there is one."""
    opens = v.last is not None and v.last.job_id is not None
    hint = "Enter: the latest pass's job" if opens else f"Enter: no pass in {clean(v.environment, limit=20)} yet"
    return Text(hint, style="dim")


class BackfillsScreen(DataScreen, Flows, BackfillFlows):
    SCOPE = "backfills"
    MODE = "backfills"

    _board: Any = None
    _offered: tuple[bool, bool, bool] | None = None  # (x, c, f) as the footer was last drawn

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        yield Static("Backfills", classes="screen-title", id="backfills-title")
        yield KeyedTable(self._columns(), id="backfills")
        yield Static("", id="empty", classes="empty")
        yield Static("", id="bf-progress", classes="panel")
        # The gate's code and fix always show; its cause wraps under them in a bounded height and
        # scrolls past it (app.tcss), so a long one never pushes the ledger off the screen.
        with Vertical(id="bf-gate-box", classes="panel"):
            yield Static("", id="bf-gate")
            with VerticalScroll(id="bf-cause"):
                yield Static("", id="bf-cause-text")
        yield Static("History here, newest first", classes="section", id="bf-history-title")
        yield KeyedTable(NARROW_HISTORY if self.app.size.width < NARROW_BELOW else HISTORY, id="bf-history")
        yield Static("", id="note", classes="note")
        yield from self.compose_bottom()

    def on_mount(self) -> None:
        self.query_one("#backfills", KeyedTable).focus()
        super().on_mount()

    async def fetch(self) -> BackfillsLoaded:
        return BackfillsLoaded(await self.source.backfills())

    def _columns(self) -> tuple[tuple[str, str], ...]:
        return NARROW if self.app.size.width < NARROW_BELOW else COLUMNS

    def _compact(self) -> bool:
        return self.app.size.height < SHORT_BELOW

    def on_resize(self) -> None:
        self.set_class(self._compact(), "-short")
        self.query_one("#backfills", KeyedTable).set_columns(self._columns())
        if self._board is not None:  # redrawn at the new width: the title breaks its line to fit it
            self.on_backfills_loaded(BackfillsLoaded(self._board))

    def on_backfills_loaded(self, message: BackfillsLoaded) -> None:
        board = self._board = message.data
        table = self.query_one("#backfills", KeyedTable)
        columns = self._columns()
        table.set_columns(columns)
        self.set_class(self._compact(), "-short")
        table.sync([(key_of(v), _pick(row_cells(v), columns)) for v in board.rows])
        width = max(0, self.app.size.width - 2)  # the title spans the screen, less its padding
        update_changed(self.query_one("#backfills-title", Static), title_text(board, width))
        empty = self.query_one("#empty", Static)
        empty.display = not board.rows
        update_changed(empty, NOTHING_DECLARED)
        for part in ("#backfills", "#bf-progress", "#bf-gate-box", "#bf-history-title", "#bf-history", "#note"):
            self.query_one(part).display = bool(board.rows)
        self._show_selected()

    def _show_selected(self) -> None:
        v = self.selected()
        if v is None:
            return
        now = self.source.now()
        progress = progress_text(v, now, console_env=self._board.environment, compact=self._compact())
        update_changed(self.query_one("#bf-progress", Static), progress)
        update_changed(self.query_one("#bf-gate", Static), gate_text(v, keys=not self.source.read_only))
        cause = gate_cause(v)
        scroll = self.query_one("#bf-cause", VerticalScroll)
        scroll.display = bool(cause.plain)
        if update_changed(self.query_one("#bf-cause-text", Static), cause):
            scroll.scroll_home(animate=False)  # another gate's cause reads from its start
        runs = self._board.history.get((v.name, v.environment), [])
        update_changed(
            self.query_one("#bf-history-title", Static),
            Text(f"Ledger of {clean(v.name, limit=40)} in {clean(v.environment, limit=20)}, newest first"),
        )
        history = self.query_one("#bf-history", KeyedTable)
        columns = NARROW_HISTORY if self.app.size.width < NARROW_BELOW else HISTORY
        history.set_columns(columns)
        history.sync([(r.id, history_cells(r, now)[: len(columns)]) for r in runs])
        update_changed(self.query_one("#note", Static), hint_text(v))
        # x, c and f are offered on the rows they can act on: the footer is redrawn when the row
        # under the cursor (or its pass) changes that, not on every refresh.
        offered = (retryable(v), own_live(v), v.applied is not None)
        if offered != self._offered:
            self._offered = offered
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        allowed = super().check_action(action, parameters)
        if not allowed or action not in ("retry_pass", "cancel_pass", "force"):
            return allowed
        v = self.selected()
        if v is None:
            return False
        # f reruns an applied backfill; where none completed, w starts the same write pass.
        return (
            retryable(v)
            if action == "retry_pass"
            else own_live(v)
            if action == "cancel_pass"
            else v.applied is not None
        )

    def selected(self) -> Any:
        key = self.query_one("#backfills", KeyedTable).selected_key
        if self._board is None or key is None:
            return None
        return next((v for v in self._board.rows if key_of(v) == key), None)

    def on_data_table_row_highlighted(self, event: KeyedTable.RowHighlighted) -> None:
        event.stop()
        if self._board is not None and event.data_table.id == "backfills":
            self._show_selected()

    def on_data_table_row_selected(self, event: KeyedTable.RowSelected) -> None:
        event.stop()
        if event.data_table.id == "backfills":
            self.action_open_pass()

    # --- actions (the action table's keys) ----------------------------------------------------------

    def action_open_pass(self) -> None:
        v = self.selected()
        if v is None:
            return
        if v.last is None or v.last.job_id is None:
            self.notify(f"{clean(v.name, limit=40)} has no pass in {clean(v.environment, limit=20)} yet.", timeout=3)
        else:
            self.open_job(v.last.job_id)

    def action_dry_run(self) -> None:
        self.start_flow(False, False)

    def action_write(self) -> None:
        self.start_flow(True, False)

    def action_force(self) -> None:
        self.start_flow(True, True)

    def action_retry_pass(self) -> None:
        self.retry_flow()

    def action_cancel_pass(self) -> None:
        self.cancel_flow()
