"""Dead letters, grouped by job name and error code (and stop reason), with bulk actions that
act on everything matching, not just what is visible, after a dry run."""

from __future__ import annotations

from dataclasses import fields, replace

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from console import palette
from console.format import cell, clean, packed, since
from console.messages import DeadLettersLoaded
from console.screens.base import DataScreen
from console.screens.filter_bar import Filtered
from console.screens.flows import Flows
from console.widgets.filter_bar import FilterBar
from console.widgets.fresh import update_changed
from console.widgets.keyed_table import KeyedTable
from engine.introspect.filters import describe_filter, group_filter
from engine.projections import DeadGroup, DeadLetters, JobFilter
from engine.types import JobState

COLUMNS = (
    ("job name", "name"),
    ("error code", "code"),
    ("stop reason", "stop"),
    ("count", "count"),
    ("attempt", "attempt"),
    ("tenants", "tenants"),
    ("first seen", "first"),
    ("last seen", "last"),
    ("last error", "error"),
)
# Under NARROW_BELOW columns (an 80x24 terminal) the table keeps name, code, stop reason, count
# and tenants, names and codes cut shorter, so it fits without scrolling sideways; the selected
# group's lines under it say the rest: when it was first and last seen, the last error and its
# attempt ("attempts-exhausted at attempt 5 of 5").
NARROW_BELOW = 100
NARROW = tuple(c for c in COLUMNS if c[1] in ("name", "code", "stop", "count", "tenants"))
# Under TINY_BELOW (60x20) the stop reason goes too (the last error's line says it), so the count
# stays on screen.
TINY_BELOW = 70
TINY = tuple(c for c in NARROW if c[1] != "stop")
NAME_LIMIT, CODE_LIMIT = (26, 20, 18), (22, 18, 16)  # wide, narrow, tiny


def group_key(g: DeadGroup) -> str:
    return f"{g.name}\x1f{g.error_code or ''}\x1f{g.stop_reason or ''}"


def group_row(g: DeadGroup, now, columns: tuple[tuple[str, str], ...] = COLUMNS) -> tuple[Text, ...]:  # type: ignore[no-untyped-def]
    fit = (COLUMNS, NARROW, TINY).index(columns) if columns in (COLUMNS, NARROW, TINY) else 0
    cells = {
        "name": cell(g.name, limit=NAME_LIMIT[fit], style="bold"),
        "code": cell(g.error_code, limit=CODE_LIMIT[fit], style=palette.style("error")),
        "stop": cell(g.stop_reason, limit=18),
        "count": Text(f"{g.count:,}", justify="right", style="bold"),
        "attempt": Text(f"{g.attempt} of {g.max_attempts}", justify="right"),
        "tenants": Text(str(g.tenants), justify="right"),
        "first": Text(since(g.first_seen, now), style="dim"),
        "last": Text(since(g.last_seen, now), style="dim"),
        "error": cell(g.last_error, limit=40, style="dim"),
    }
    return tuple(cells[key] for _, key in columns)


def sort_value(g: DeadGroup, column: str) -> object:
    return {
        "count": g.count,
        "attempt": g.attempt,
        "tenants": g.tenants,
        "first": g.first_seen.timestamp(),
        "last": g.last_seen.timestamp(),
        "code": g.error_code or "",
        "stop": g.stop_reason or "",
        "error": g.last_error or "",
    }.get(column)


class DeadLettersScreen(Filtered, DataScreen, Flows):
    TABLE_ID = "groups"
    SCOPE = "dead_letters"
    MODE = "dead_letters"

    def __init__(self) -> None:
        super().__init__()
        self.where = JobFilter()
        self.groups: dict[str, DeadGroup] = {}

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        yield Static("Dead letters", classes="screen-title", id="dead-title")
        yield FilterBar("filter: queue=Q name=N tenant=T code=X stop=S input.F=V, or an id/key")
        table = KeyedTable(self._columns(), id="groups")
        table.sort_value = lambda key, col: sort_value(self.groups[key], col) if key in self.groups else None
        yield table
        yield Static("", id="empty", classes="empty")
        yield Static("", id="detail", classes="note")
        yield from self.compose_bottom()

    def on_mount(self) -> None:
        if self.focus_queue:
            self.where = JobFilter(queue=self.focus_queue)
        flt = self.query_one(FilterBar)
        flt.show(self.where)
        flt.display = not self.where.empty
        self.query_one("#groups", KeyedTable).focus()
        super().on_mount()

    def _columns(self) -> tuple[tuple[str, str], ...]:
        width = self.size.width or self.app.size.width
        return TINY if width < TINY_BELOW else NARROW if width < NARROW_BELOW else COLUMNS

    def _dead(self) -> JobFilter:
        return replace(self.where, state=JobState.DEAD)

    async def fetch(self) -> DeadLettersLoaded:
        return DeadLettersLoaded(await self.source.dead_letters(self._dead()))

    def on_dead_letters_loaded(self, message: DeadLettersLoaded) -> None:
        view: DeadLetters = message.data
        now = self.source.now()
        self.groups = {group_key(g): g for g in view.groups}
        table = self.query_one("#groups", KeyedTable)
        columns = self._columns()
        table.set_columns(columns)
        table.sync([(group_key(g), group_row(g, now, columns)) for g in view.groups])
        title = Text("Dead letters", style="bold")
        title.append(f"  {view.total} jobs in {len(view.groups)} groups")
        if not self.where.empty:
            title.append(f"  · {clean(describe_filter(self.where), limit=80)}")
        update_changed(self.query_one("#dead-title", Static), title)
        empty = self.query_one("#empty", Static)
        empty.display = not view.groups
        update_changed(empty, "No dead letters." + (" (for this filter)" if not self.where.empty else ""))
        self._show_selected()

    def on_data_table_row_highlighted(self, event: KeyedTable.RowHighlighted) -> None:
        self._show_selected()

    def _show_selected(self) -> None:
        g = self._selected()
        note = self.query_one("#detail", Static)
        if g is None:
            update_changed(note, "")
            return
        t = Text("last error: ", style="dim")
        t.append(clean(g.last_error or "—", limit=220))
        if g.last_fix:  # what that error said to do (a handler's JobsError fix)
            t.append("\nfix: ", style="dim")
            t.append(clean(g.last_fix, limit=160), style="bold")
        if self._columns() is not COLUMNS:  # the columns left out
            now = self.source.now()
            t.append(
                f"\nfirst seen {since(g.first_seen, now)} · last seen {since(g.last_seen, now)}",
                style="dim",
            )
        marked = len(self.query_one("#groups", KeyedTable).marked_keys())
        hints = (
            ["Enter: its jobs", "s: sort"]
            if self.source.read_only
            else [f"{marked} groups marked: x/c/d act on all of them", "Esc clears the marks"]
            if marked
            else ["Enter: its jobs", "x/c/d: retry/cancel/discard the group", "X/C/D: every group", "space: mark"]
        )
        t.append("\n")  # read-only offers no action, so it names none; lines break between hints
        t.append_text(packed(hints, max(0, self.app.size.width - 2), style="dim"))
        update_changed(note, t)

    def on_resize(self) -> None:
        if self.is_mounted:
            table = self.query_one("#groups", KeyedTable)
            if table.set_columns(self._columns()) and self.groups:  # refilled at the new width
                now = self.source.now()
                table.sync([(k, group_row(g, now, self._columns())) for k, g in self.groups.items()])
            self._show_selected()

    def _selected(self) -> DeadGroup | None:
        key = self.query_one("#groups", KeyedTable).selected_key
        return self.groups.get(key) if key else None

    def _group_filter(self, g: DeadGroup) -> JobFilter:
        """The screen's filter narrowed to the group: its name, error code and stop reason (a group
        without a code is the dead letters without one, not every code)."""
        return group_filter(self._dead(), g)

    # --- actions ---------------------------------------------------------------------------------

    def scoped(self, where: JobFilter) -> JobFilter:
        return replace(where, state=None)  # every row here is dead: a typed state= is not kept

    def on_data_table_row_selected(self, event: KeyedTable.RowSelected) -> None:
        event.stop()
        self.action_open_group()

    def action_open_group(self) -> None:
        g = self._selected()
        if g:  # the group's jobs under every field of this screen's filter (search, since, until too)
            self.open_jobs(**{f.name: getattr(self._group_filter(g), f.name) for f in fields(JobFilter)})

    def action_bulk(self, action: str, scope: str) -> None:
        said: str | None = None
        if scope == "group":
            marked = self.query_one("#groups", KeyedTable).marked_keys()
            groups = [self.groups[k] for k in marked if k in self.groups]
            if not groups:
                g = self._selected()
                groups = [g] if g is not None else []
            if not groups:
                return
            if marked:
                said = f"the {len(groups)} marked groups"
            wheres = [self._group_filter(g) for g in groups]
        elif action == "cancel":
            # Every live job failing the way a group shown fails; the screen's filter alone, with
            # its state dropped, would name every live job, failing or not.
            wheres = [self._group_filter(g) for g in self.groups.values()]
            said = f"the {len(wheres)} groups shown"
            if not wheres:
                self.notify("Nothing to cancel: no dead-letter group is shown.", timeout=5)
                return
        else:
            wheres = [self._dead()]
        # A dead job is final: cancelling a group means cancelling the LIVE jobs that match it
        # (retries still failing with that code), so they stop adding to the dead letters. A live
        # job has stopped for no reason yet: the group's stop reason does not narrow a cancel.
        live = [replace(w, state=None, stop_reason=None) for w in wheres]
        if action == "cancel" and said is not None:
            said += " (their live jobs)"
        self.bulk_flow(action, wheres if action != "cancel" else live, said)

    def restart_pages(self) -> None:
        """A new filter: marks of groups read under the old one are dropped."""
        self.clear_marks()

    def marks_changed(self) -> None:
        self._show_selected()
