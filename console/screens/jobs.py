"""Jobs: a filterable, keyset-paginated list, newest first; Enter opens a job."""

from __future__ import annotations

from dataclasses import replace

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from console.format import ago, cell, clean, short_id
from console.messages import JobsLoaded
from console.screens.base import DataScreen
from console.screens.filter_bar import Filtered
from console.screens.flows import Flows
from console.widgets.filter_bar import FilterBar
from console.widgets.fresh import update_changed
from console.widgets.keyed_table import KeyedTable
from console.widgets.state_bar import state_text
from engine.introspect.filters import describe_filter
from engine.projections import JobFilter, JobPage, JobSummary
from engine.types import LIVE_STATES, JobState

COLUMNS = (
    ("id", "id"),
    ("name", "name"),
    ("queue", "queue"),
    ("tenant", "tenant"),
    ("state", "state"),
    ("attempt", "attempt"),
    ("error", "error"),
    ("run at", "run_at"),
    ("created", "created"),
)
_LIVE = {s.value for s in LIVE_STATES}


def job_row(j: JobSummary, now) -> tuple[Text, ...]:  # type: ignore[no-untyped-def]
    return (
        Text(short_id(j.id), style="dim"),
        cell(j.name, limit=28),
        cell(j.queue, limit=16),
        cell(j.tenant, limit=14),
        state_text(j.state.value),
        Text(f"{j.attempt}/{j.max_attempts}", justify="right"),
        cell(j.error_code, limit=22, style="red") if j.error_code else Text("—", style="dim"),
        Text(ago(j.run_at, now) if j.state.value in _LIVE else "—", style="dim"),
        Text(ago(j.created_at, now), style="dim"),
    )


class JobsScreen(Filtered, DataScreen, Flows):
    TABLE_ID = "jobs"
    SCOPE = "jobs"
    MODE = "jobs"

    def crumb(self) -> str:
        if self.where.empty:
            return "Jobs"
        only_queue = self.where.queue and describe_filter(self.where) == f"queue={self.where.queue}"
        return f"Jobs › {clean(self.where.queue if only_queue else describe_filter(self.where), limit=28)}"

    def __init__(self, where: JobFilter | None = None, *, drill: bool = False) -> None:
        super().__init__()
        self.where = where if where is not None else JobFilter()
        self.drill = drill  # pushed from another screen (Escape goes back)
        self.cursors: list[str | None] = [None]  # keyset cursors of the pages seen so far
        self.page: JobPage | None = None
        self.rows: dict[str, JobSummary] = {}

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        yield Static("Jobs", classes="screen-title", id="jobs-title")
        yield FilterBar("filter: queue=Q state=dead name=N tenant=T code=X input.invoice_id=42, or an id/key")
        yield KeyedTable(COLUMNS, id="jobs")
        yield Static("", id="empty", classes="empty")
        yield Static("", id="pager", classes="note")
        yield from self.compose_bottom()

    def on_mount(self) -> None:
        if not self.drill and self.where.empty and self.focus_queue:
            self.where = JobFilter(queue=self.focus_queue)
        flt = self.query_one(FilterBar)
        flt.show(self.where)
        flt.display = False
        self.query_one("#jobs", KeyedTable).focus()
        super().on_mount()

    async def fetch(self) -> JobsLoaded:
        return JobsLoaded(await self.source.jobs(self.where, cursor=self.cursors[-1]))

    def on_jobs_loaded(self, message: JobsLoaded) -> None:
        page: JobPage = message.data
        self.page = page
        now = self.source.now()
        self.rows = {j.id: j for j in page.items}
        self.query_one("#jobs", KeyedTable).sync([(j.id, job_row(j, now)) for j in page.items])
        title = Text("Jobs", style="bold")
        title.append(
            f"  {clean(describe_filter(self.where), limit=100)}" if not self.where.empty else "  all", style=""
        )
        update_changed(self.query_one("#jobs-title", Static), title)
        empty = self.query_one("#empty", Static)
        empty.display = not page.items
        update_changed(empty, "No job matches this filter." if not self.where.empty else "No jobs yet.")
        n = len(self.cursors)
        pager = f"page {n} · {len(page.items)} shown of {page.total} matching"
        pager += " · n: next page" if page.next_cursor else " · last page"
        if n > 1:
            pager += " · b: previous page"
        update_changed(self.query_one("#pager", Static), Text(pager + " · /: filter · Enter: open", style="dim"))

    # --- filter and pages ------------------------------------------------------------------------

    def restart_pages(self) -> None:
        self.cursors = [None]

    def action_page(self, step: int) -> None:
        if step > 0 and self.page is not None and self.page.next_cursor:
            self.cursors.append(self.page.next_cursor)
        elif step < 0 and len(self.cursors) > 1:
            self.cursors.pop()
        else:
            return
        self.reload()

    def action_bulk(self, action: str) -> None:
        # Everything the filter matches, not just this page; a retry only ever touches dead jobs.
        where = (
            self.where
            if action != "retry" or self.where.state is not None
            else replace(self.where, state=JobState.DEAD)
        )
        self.bulk_flow(action, where)

    # --- a job -----------------------------------------------------------------------------------

    def _selected(self) -> JobSummary | None:
        key = self.query_one("#jobs", KeyedTable).selected_key
        return self.rows.get(key) if key else None

    def on_data_table_row_selected(self, event: KeyedTable.RowSelected) -> None:
        event.stop()
        self.action_open_job()

    def action_open_job(self) -> None:
        j = self._selected()
        if j:
            self.open_job(j.id)

    def action_copy_id(self) -> None:
        j = self._selected()
        if j:
            self.copy_id(j.id)

    def action_why(self) -> None:
        j = self._selected()
        if j:
            self.open_why_job(j.id)

    def action_retry(self) -> None:
        j = self._selected()
        if j is None:
            return
        if j.state is not JobState.DEAD:
            self.notify(f"Only a dead job can be retried; this one is {j.state.value}.", severity="warning", timeout=4)
            return
        self.retry_job(j.id, j.name)

    def action_cancel(self) -> None:
        j = self._selected()
        if j is None:
            return
        if j.state.value not in _LIVE:
            self.notify(
                f"Only a live job can be cancelled; this one is {j.state.value}.", severity="warning", timeout=4
            )
            return
        self.cancel_job(j.id, j.name, j.state.value)
