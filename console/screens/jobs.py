"""Jobs: a filterable, keyset-paginated list, newest first; Enter opens a job.

The engine pages the list newest first (a keyset on the id, so a page never shifts while jobs
arrive). Sorting by another column sorts the page shown, and the pager line says so: a sort over
every matching job would need the engine to page in that order, which its list indexes do not
serve. ``t`` narrows the list to one state at a time (the states that want attention first).
Marked rows (space) take x, c and d together behind one confirmation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from console import palette
from console.actions import DISCARD_EFFECT
from console.format import cell, clean, packed, short_id, since
from console.messages import JobsLoaded
from console.screens.base import DataScreen
from console.screens.filter_bar import Filtered
from console.screens.flows import Flows, result_text
from console.screens.flows_bulk import Item
from console.widgets.filter_bar import FilterBar
from console.widgets.fresh import update_changed
from console.widgets.keyed_table import KeyedTable
from console.widgets.state_bar import state_text
from engine.introspect.filters import describe_filter
from engine.projections import JobFilter, JobPage, JobSummary
from engine.types import LIVE_STATES, JobState

# What a job is and where it stands first: at 80 columns the state and the attempt stay on screen.
COLUMNS = (
    ("id", "id"),
    ("name", "name"),
    ("state", "state"),
    ("attempt", "attempt"),
    ("queue", "queue"),
    ("tenant", "tenant"),
    ("error", "error"),
    ("run at", "run_at"),
    ("created", "created"),
)
_LIVE = {s.value for s in LIVE_STATES}
# What ``t`` steps through: the states an operator is asked about first, then the list whole.
STATE_CYCLE = (
    JobState.PARKED,
    JobState.SUSPENDED,
    JobState.DEAD,
    JobState.RUNNING,
    JobState.DELAYED,
    JobState.READY,
    None,
)
ELIGIBLE = {"retry": {JobState.DEAD}, "cancel": set(LIVE_STATES), "discard": {JobState.DEAD}}
ROW_KEYS = (("x", "retry"), ("c", "cancel"), ("d", "discard"))
WHAT = {
    "retry": "Each becomes ready now with a fresh attempt budget.",
    "cancel": "Each becomes cancelled and will not run (a running handler is signalled to stop).",
    "discard": f"Each is deleted; {DISCARD_EFFECT}.",
}


def sort_value(j: JobSummary, column: str) -> object:
    """How a column sorts: times and counts as numbers, not as the text shown."""
    return {
        "attempt": j.attempt,
        "run_at": j.run_at.timestamp(),
        "created": j.created_at.timestamp(),
        "state": j.state.value,
        "error": j.error_code or "",
        "tenant": j.tenant or "",
    }.get(column)


NAME_LIMIT, QUEUE_LIMIT, TENANT_LIMIT = 28, 16, 14
SCROLLBAR = 2  # the table's vertical scrollbar, shown once a page is taller than the screen


def name_limit(jobs: Sequence[JobSummary], width: int) -> int:
    """How long a name may be for the columns up to the tenant to fit ``width`` beside the
    scrollbar: a long name on the page is cut, not the tenant at the screen's edge. Every column
    is its widest cell or its label, and a cell's padding each side."""
    if not width:
        return NAME_LIMIT
    widest = [
        12,  # the short id
        max([len("state"), *(len(j.state.value) for j in jobs)]),
        max([len("attempt"), *(len(f"{j.attempt}/{j.max_attempts}") for j in jobs)]),
        max([len("queue"), *(min(len(j.queue), QUEUE_LIMIT) for j in jobs)]),
        max([len("tenant"), *(min(len(j.tenant or "—"), TENANT_LIMIT) for j in jobs)]),
    ]
    return max(12, min(NAME_LIMIT, width - SCROLLBAR - sum(w + 2 for w in widest) - 2))


def job_row(j: JobSummary, now, name: int = NAME_LIMIT) -> tuple[Text, ...]:  # type: ignore[no-untyped-def]
    return (
        Text(short_id(j.id), style="dim"),
        cell(j.name, limit=name),
        state_text(j.state.value),
        Text(f"{j.attempt}/{j.max_attempts}", justify="right"),
        cell(j.queue, limit=QUEUE_LIMIT),
        cell(j.tenant, limit=TENANT_LIMIT),
        cell(j.error_code, limit=22, style=palette.style("error")) if j.error_code else Text("—", style="dim"),
        Text(since(j.run_at, now) if j.state.value in _LIVE else "—", style="dim"),
        Text(since(j.created_at, now), style="dim"),
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
        self._offers: tuple[object, ...] | None = None  # what the footer was drawn for

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        yield Static("Jobs", classes="screen-title", id="jobs-title")
        yield FilterBar("filter: queue=Q state=dead name=N tenant=T code=X input.F=V, or an id/key")  # fits 80
        table = KeyedTable(COLUMNS, id="jobs")
        table.sort_value = lambda key, col: sort_value(self.rows[key], col) if key in self.rows else None
        yield table
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
        table = self.query_one("#jobs", KeyedTable)
        limit = name_limit(page.items, table.size.width or self.app.size.width)
        table.sync([(j.id, job_row(j, now, limit)) for j in page.items])
        title = Text("Jobs", style="bold")
        title.append(
            f"  {clean(describe_filter(self.where), limit=100)}" if not self.where.empty else "  all", style=""
        )
        update_changed(self.query_one("#jobs-title", Static), title)
        empty = self.query_one("#empty", Static)
        empty.display = not page.items
        update_changed(empty, "No job matches this filter." if not self.where.empty else "No jobs yet.")
        self._show_pager()
        self._redraw_offers()

    def _redraw_offers(self) -> None:
        """n and b are offered only where there is a page to go to, X D C only for the filter's
        state, x c d only where the selected (or a marked) row can take them: the footer is
        redrawn when that changes (a refresh, the cursor, the marks), not on every refresh."""
        if self.page is None:
            return
        acts = tuple(self._acts(action) for action in ELIGIBLE)
        offers = (bool(self.page.next_cursor), len(self.cursors) > 1, self.where.state, *acts)
        if offers != self._offers:
            self._offers = offers
            self.refresh_bindings()

    def _acts(self, action: str) -> bool:
        """x, c or d would act here: on a marked row it changes, else on the selected row."""
        tables = list(self.query("#jobs").results(KeyedTable))  # none once the screen is removed
        if not tables:
            return False
        chosen = [self.rows[k] for k in tables[0].marked_keys() if k in self.rows]
        if not chosen:
            chosen = [j for j in [self.rows.get(tables[0].selected_key or "")] if j is not None]
        return any(j.state in ELIGIBLE[action] for j in chosen)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "page" and parameters:
            older = isinstance(parameters[0], int) and parameters[0] > 0
            if not (self.page is not None and self.page.next_cursor if older else len(self.cursors) > 1):
                return False
        # X and D act on dead jobs, C on live ones: not offered under a filter naming a state they never reach.
        state = self.where.state
        if action == "bulk" and parameters and state is not None:
            if state not in (LIVE_STATES if parameters[0] == "cancel" else (JobState.DEAD,)):
                return False
        if action in ELIGIBLE and not self._acts(action):
            return False
        return super().check_action(action, parameters)

    def _show_pager(self) -> None:
        page = self.page
        if page is None:
            return
        table = self.query_one("#jobs", KeyedTable)
        n = len(self.cursors)
        parts = [f"page {n}", f"{len(page.items)} shown of {page.total} matching"]
        parts.append("n: next page" if page.next_cursor else "last page")
        if n > 1:
            parts.append("b: previous page")
        marked = len(table.marked_keys())
        if marked:  # the keys that act on the marked rows (read-only offers none): the hint names those
            acting = [] if self.source.read_only else [k for k, a in ROW_KEYS if self._acts(a)]
            verb = f"{' '.join(acting)} act{'s' if len(acting) == 1 else ''} on them; " if acting else ""
            parts.append(f"{marked} marked ({verb}Esc clears)")
        said = table.sort_title()
        if said:
            parts.append(f"sorted by {said}: this page only (the engine pages newest first)")
        else:
            parts += ["/: filter", "t: state", "s: sort", "Enter: open"]
        pager = packed(parts, max(0, self.app.size.width - 2), style="dim")  # the line spans the screen
        update_changed(self.query_one("#pager", Static), pager)

    def on_resize(self) -> None:
        self._show_pager()  # its lines break between two hints at the new width

    def sorted_changed(self, table: KeyedTable) -> None:
        self._show_pager()

    def marks_changed(self) -> None:
        self._show_pager()
        self._redraw_offers()

    def on_data_table_row_highlighted(self, event: KeyedTable.RowHighlighted) -> None:
        event.stop()
        self._redraw_offers()

    # --- filter and pages ------------------------------------------------------------------------

    def restart_pages(self) -> None:
        self.cursors = [None]
        self.clear_marks()

    def action_next_state(self) -> None:
        """Narrow the list to the next state of STATE_CYCLE (keeping the rest of the filter)."""
        now = self.where.state
        following = STATE_CYCLE[(STATE_CYCLE.index(now) + 1) % len(STATE_CYCLE)] if now in STATE_CYCLE else None
        self.where = replace(self.where, state=following)
        self.query_one(FilterBar).show(self.where)
        self.restart_pages()
        self.query_one("#jobs", KeyedTable).restart()
        self.leave_filter(not self.where.empty)
        self.redraw_nav()
        self.reload()

    def action_page(self, step: int) -> None:
        if step > 0 and self.page is not None and self.page.next_cursor:
            self.cursors.append(self.page.next_cursor)
        elif step < 0 and len(self.cursors) > 1:
            self.cursors.pop()
        else:
            return
        self.clear_marks()
        self.reload()

    def action_bulk(self, action: str) -> None:
        # Everything the filter matches, not just this page; a retry or a discard only ever
        # touches dead jobs.
        where = (
            self.where
            if action == "cancel" or self.where.state is not None
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

    def action_logs(self) -> None:
        j = self._selected()
        if j:
            self.navigate("logs", job_id=j.id)

    def action_why(self) -> None:
        j = self._selected()
        if j:
            self.open_why_job(j.id)

    def _targets(self, action: str) -> None:
        """The marked rows when there are any (one confirmation for all), else the selected row."""
        marked = [self.rows[k] for k in self.query_one("#jobs", KeyedTable).marked_keys() if k in self.rows]
        if marked:
            self._act_on_marked(action, marked)
            return
        j = self._selected()
        if j is None:
            return
        if j.state not in ELIGIBLE[action]:
            need = "a live job" if action == "cancel" else "a dead job"
            verb = {"retry": "retried", "cancel": "cancelled", "discard": "discarded"}[action]
            self.notify(f"Only {need} can be {verb}; this one is {j.state.value}.", severity="warning", timeout=4)
            return
        if action == "retry":
            self.retry_job(j.id, j.name)
        elif action == "cancel":
            self.cancel_job(j.id, j.name, j.state.value)
        else:
            self.discard_job(j.id, j.name)

    def _act_on_marked(self, action: str, marked: list[JobSummary]) -> None:
        ok = [j for j in marked if j.state in ELIGIBLE[action]]
        left = [f"{short_id(j.id)} {j.name}: {j.state.value}" for j in marked if j.state not in ELIGIBLE[action]]
        verb = {"retry": "Retry", "cancel": "Cancel", "discard": "Discard"}[action]
        if not ok:
            need = "live" if action == "cancel" else "dead"
            self.notify(f"None of the {len(marked)} marked jobs is {need}: nothing to {action}.", timeout=5)
            return
        call = {"retry": self.source.retry, "cancel": self.source.cancel, "discard": self.source.discard}[action]

        def item(j: JobSummary) -> Item:
            async def run(note: str | None) -> str | None:
                r = await call(j.id, note=note)
                return result_text(r) if r.changed else None

            return Item(j.id, f"{short_id(j.id)}  {j.name}  {j.state.value}", run)

        self.marked_flow(verb, "job", [item(j) for j in ok], left, WHAT[action])

    def action_retry(self) -> None:
        self._targets("retry")

    def action_cancel(self) -> None:
        self._targets("cancel")

    def action_discard(self) -> None:
        self._targets("discard")
