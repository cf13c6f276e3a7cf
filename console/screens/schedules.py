"""Schedules: the cron tasks (cron in words, zone, next and last run, the last run's job state,
skipped by catch-up, pause) and the scheduler's leader and its lease. Enter opens the last run's
job; p pauses or resumes a task, t triggers one now, each behind the confirm dialog."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from console import palette
from console.format import cell, clean, relative_at, since
from console.messages import SchedulesLoaded
from console.screens.base import DataScreen
from console.screens.confirm import Confirmed
from console.screens.flows import Flows
from console.widgets.fresh import update_changed
from console.widgets.keyed_table import KeyedTable
from console.widgets.state_bar import state_text
from engine.durations import duration

# The verdict first: at 80 columns a paused task and when it next runs show without scrolling
# sideways; the cron and its zone come last (the selected task's line below spells both out).
COLUMNS = (
    ("task", "task"),
    ("status", "status"),
    ("next", "next"),
    ("last run", "last"),
    ("last job", "state"),
    ("skipped", "skipped"),
    ("cron", "cron"),
    ("zone", "zone"),
)
# Under NARROW_BELOW columns (80x24) the table keeps the cron whole and leaves out when the task
# last ran, its skipped count and its zone, which the selected task's lines below say.
NARROW_BELOW = 100
NARROW = tuple(c for c in COLUMNS if c[1] not in ("last", "skipped", "zone"))


def task_row(t: Any, now: Any, columns: tuple[tuple[str, str], ...] = COLUMNS) -> tuple[Text, ...]:
    status = (
        Text(f"PAUSED {clean(t.paused_by or '?', limit=14)}", style=palette.style("flag"))
        if t.paused
        else Text("RETIRED", style=palette.style("flag"))
        if t.retired
        else Text("on")
    )
    cells = {
        "task": cell(t.name, limit=24, style="bold"),
        "status": status,
        "next": Text(relative_at(t.next_at, now)),
        "last": Text(since(t.last_at, now), style="dim"),
        "state": state_text(t.last_job_state) if t.last_job_state else Text("—", style="dim"),
        "skipped": Text(str(t.skipped), justify="right", style=palette.style("warn") if t.skipped else "dim"),
        "cron": cell(t.cron, limit=18),
        "zone": cell(t.timezone, limit=18),
    }
    return tuple(cells[key] for _, key in columns)


def detail_text(t: Any, now: Any) -> Text:
    """The selected task in words: what the cron means, its catch-up, why it is paused or retired."""
    out = Text(clean(t.name, limit=40), style="bold")
    out.append(f"  {clean(t.words, limit=60)} ({clean(t.timezone, limit=30)})")
    out.append(f"  catch-up {t.catch_up}" + (f" (at most {t.max_catch_up})" if t.max_catch_up else ""), style="dim")
    if t.skipped:
        out.append(f"  {t.skipped} skipped by catch-up", style=palette.style("warn"))
    if t.paused:
        note = f": {clean(t.pause_note, limit=40)}" if t.pause_note else ""
        out.append(f"  paused by {clean(t.paused_by or '?', limit=20)}{note}", style=palette.style("warn"))
    if t.retired:
        out.append(
            f"  retired: no scheduler process has declared it for {duration((now - t.seen_at).total_seconds())}"
            " (removed from the code, or no scheduler runs); none of its occurrences is enqueued until one"
            " declares it again",
            style=palette.style("warn"),
        )
    # Enter is the table's own key, which the footer does not show: said here.
    ran = f"\nlast run {since(t.last_at, now)}" if t.last_at else "\nno run yet"
    out.append(ran + (" · Enter: that run's job" if t.last_job_id else ""), style="dim")
    return out


def leader_text(lead: Any, now: Any) -> Text:
    if lead is None:
        return Text("No scheduler has ever led: no cron task is being enqueued.", style=palette.style("alert"))
    t = Text("Leader ", style="bold")
    t.append(clean(lead.holder, limit=40), style="bold")
    t.append(f"  {clean(lead.host or '?', limit=20)} pid {lead.pid or '?'}  term {lead.term}  ")
    if lead.live:
        t.append(f"lease ends {relative_at(lead.lease_until, now)}", style=palette.style("ok"))
    else:
        t.append(f"LEASE LAPSED {since(lead.lease_until, now)}: no one leads", style=palette.style("alarm"))
    t.append("  last tick " + ("never" if lead.ticked_at is None else since(lead.ticked_at, now)), style="dim")
    return t


class SchedulesScreen(DataScreen, Flows):
    SCOPE = "schedules"
    MODE = "schedules"

    _view: Any = None

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        yield Static("Schedules", classes="screen-title", id="schedules-title")
        yield Static("", id="leader", classes="note")
        table = KeyedTable(self._columns(), id="schedules")
        table.sort_value = self._sort_value
        yield table
        yield Static("", id="detail", classes="note")
        yield Static("", id="empty", classes="empty")
        yield from self.compose_bottom()

    def on_mount(self) -> None:
        self.query_one("#schedules", KeyedTable).focus()
        super().on_mount()

    def _columns(self) -> tuple[tuple[str, str], ...]:
        return NARROW if (self.size.width or self.app.size.width) < NARROW_BELOW else COLUMNS

    async def fetch(self) -> SchedulesLoaded:
        return SchedulesLoaded(await self.source.schedules())

    def on_schedules_loaded(self, message: SchedulesLoaded) -> None:
        view = self._view = message.data
        now = self.source.now()
        table = self.query_one("#schedules", KeyedTable)
        columns = self._columns()
        table.set_columns(columns)
        table.sync([(t.name, task_row(t, now, columns)) for t in view.tasks])
        paused = sum(1 for t in view.tasks if t.paused)
        retired = sum(1 for t in view.tasks if t.retired and not t.paused)
        title = Text("Schedules", style="bold")
        title.append(
            f"  {len(view.tasks)} tasks"
            + (f", {paused} paused" if paused else "")
            + (f", {retired} retired" if retired else "")
        )
        update_changed(self.query_one("#schedules-title", Static), title)
        update_changed(self.query_one("#leader", Static), leader_text(view.leader, now))
        empty = self.query_one("#empty", Static)
        empty.display = not view.tasks
        update_changed(empty, "No cron task is declared. Declare one with @task(name=..., cron=...).")
        self._show_detail()

    def _show_detail(self) -> None:
        t = self._selected()
        now = self.source.now()
        update_changed(self.query_one("#detail", Static), Text("") if t is None else detail_text(t, now))

    def on_data_table_row_highlighted(self, event: KeyedTable.RowHighlighted) -> None:
        event.stop()
        if self._view is not None:
            self._show_detail()

    def _sort_value(self, key: str, column: str) -> object:
        t = next((t for t in self._view.tasks if t.name == key), None) if self._view is not None else None
        if t is None:
            return None
        when = {"next": t.next_at, "last": t.last_at}.get(column)
        return when.timestamp() if when is not None else (t.skipped if column == "skipped" else None)

    def _selected(self) -> Any:
        key = self.query_one("#schedules", KeyedTable).selected_key
        if self._view is None or key is None:
            return None
        return next((t for t in self._view.tasks if t.name == key), None)

    def on_data_table_row_selected(self, event: KeyedTable.RowSelected) -> None:
        event.stop()
        self.action_open_last()

    def action_open_last(self) -> None:
        t = self._selected()
        if t is None:
            return
        if t.last_job_id is None:
            self.notify(f"Task {clean(t.name, limit=40)} has not run yet.", timeout=3)
        else:
            self.open_job(t.last_job_id)

    def action_toggle_task(self) -> None:
        t = self._selected()
        if t is None:
            return
        name = t.name

        async def call(c: Confirmed) -> str:
            src = self.source
            p = await (src.resume_task(name, note=c.note) if t.paused else src.pause_task(name, note=c.note))
            if not p.changed:
                return f"Task {name} was already {'paused' if p.paused else 'running'}."
            return f"Task {name} {'paused' if p.paused else 'resumed'}."

        label = (clean(name, limit=40), "bold")
        if t.paused:
            body = Text.assemble("Resume task ", label, ": what fell due while it was paused is not run.")
            self.confirm_and_run("Resume this task?", body, "Resume", call)
        else:
            body = Text.assemble(
                "Pause task ",
                label,
                ": no occurrence is enqueued until it is resumed, and those that fall due "
                "meanwhile are skipped, not run at the resume.",
            )
            self.confirm_and_run("Pause this task?", body, "Pause", call)

    def action_trigger(self) -> None:
        t = self._selected()
        if t is None:
            return
        name = t.name

        async def call(c: Confirmed) -> str:
            job_id = await self.source.trigger_task(name, note=c.note)
            return f"Task {name} triggered as job {job_id}."

        body = Text.assemble(
            "Enqueue an occurrence of ", (clean(name, limit=40), "bold"), " now, under its own key (audited)."
        )
        self.confirm_and_run("Trigger this task?", body, "Trigger", call)
