"""What every data screen shares: the header and banner, its bindings from the action table, and
the refresh loop.

The loop (dolphie's rule): a refresh runs in an exclusive Textual worker, and the next one is armed
only when it has finished, so refreshes never pile up behind a slow database. A failed refresh
raises the app's banner and re-arms with backoff; the first success clears it. Only the screen
on top refreshes on its timer; a screen coming back to the top refreshes at once.

A screen never calls into the App: what happened goes up as a message (``LoadFailed``,
``Refreshed``, ``Navigate``, ``ActionSucceeded``/``ActionFailed``) and the App handles it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.worker import Worker, WorkerState

from console import actions
from console.failures import database_failure
from console.format import clean
from console.messages import ActionFailed, LoadFailed, Navigate, Refreshed
from console.widgets.banner import Banner
from console.widgets.footer import ConsoleFooter
from console.widgets.header import StatusHeader
from console.widgets.keyed_table import KeyedTable
from console.widgets.nav import NavBar

if TYPE_CHECKING:
    from console.source import Source

# Seconds between retries while the database is down: doubling from the refresh interval up to
# this, so the console is back within this long of the server's return.
MAX_BACKOFF = 5.0


class ConsoleScreen(Screen[None]):
    """A screen with the console's header, banner and footer, bound from the action table."""

    SCOPE: ClassVar[str] = "global"
    MODE: ClassVar[str | None] = None  # the nav entry this screen belongs to (marked in the nav bar)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if "BINDINGS" not in cls.__dict__:  # before Textual merges the class's bindings
            cls.BINDINGS = actions.bindings(cls.SCOPE)  # type: ignore[assignment]
        super().__init_subclass__(**kwargs)

    @property
    def source(self) -> Source:
        return self.app.source  # type: ignore[attr-defined, no-any-return]

    @property
    def focus_queue(self) -> str | None:
        """The queue the console was opened on (``--queue``), if any."""
        return getattr(self.app, "focus_queue", None)

    def crumb(self) -> str:
        """This screen's step in the breadcrumb (Jobs › billing › job 0d64…)."""
        return self.MODE.replace("_", " ").capitalize() if self.MODE else self.SCOPE.replace("_", " ")

    def copy_id(self, job_id: str) -> None:
        """The full id to the clipboard (the tables show short ids), said on screen too, so a
        terminal without clipboard support still shows the whole id."""
        self.app.copy_to_clipboard(job_id)
        self.notify(job_id, title="Copied the job id", timeout=4)

    def navigate(self, kind: str, **args: object) -> None:
        self.post_message(Navigate(kind, dict(args)))

    def compose_top(self) -> ComposeResult:
        yield StatusHeader(id="status")
        yield NavBar(id="nav")
        yield Banner(id="banner")

    def compose_bottom(self) -> ComposeResult:
        yield ConsoleFooter(actions.footer_order(self.SCOPE))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in actions.mutating_names(self.SCOPE) and self.source.read_only:
            return False  # not offered: hidden from the footer and refused (the engine refuses too)
        if action == "back" and self.is_root() and not self.marked():
            return False
        if action in ("sort", "sort_reverse", "mark"):
            return self.table() is not None
        return True

    def is_root(self) -> bool:
        """This screen is its stack's first (a number key's screen): there is nothing under it to go
        back to, whatever is open over it (the palette, a confirm)."""
        stack = self.app.screen_stack
        return not stack or stack[0] is self or self not in stack

    # --- the table: sorting and marks ------------------------------------------------------------

    def table(self) -> KeyedTable | None:
        """The screen's table (the one sorting and marks apply to), if it has one."""
        tables = list(self.query(KeyedTable))
        return tables[0] if tables else None

    def sort_table(self, reverse: bool) -> None:
        table = self.table()
        if table is None:
            return
        table.reverse_sort() if reverse else table.cycle_sort()
        self.sorted_changed(table)

    def sorted_changed(self, table: KeyedTable) -> None:
        """The sort changed: a screen that says how it sorts redraws that line."""
        said = table.sort_title()
        self.notify(f"Sorted by {said}" if said else "In the order the engine answers", timeout=2)

    def marked(self) -> list[str]:
        table = self.table()
        return table.marked_keys() if table is not None else []

    def clear_marks(self) -> None:
        for table in self.query(KeyedTable):
            table.clear_marks()

    def action_mark(self) -> None:
        table = self.table()
        if table is not None:
            table.toggle_mark()
            self.marks_changed()
            self.refresh_bindings()  # Escape is offered while there are marks to clear

    def marks_changed(self) -> None:
        """The marks changed: a screen that counts them redraws that line."""

    def redraw_nav(self) -> None:
        for bar in self.query(NavBar):
            bar.redraw()

    def on_screen_resume(self) -> None:
        for bar in self.query(NavBar):
            bar.redraw()
        for header in self.query(StatusHeader):  # it skipped the app's changes while hidden
            header._changed()
        for banner in self.query(Banner):
            banner._changed(self.app.db_error)  # type: ignore[attr-defined]

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A flow that raised is said, in a toast and the activity log, never swallowed: what the
        database or the engine said, named as the banner names it, or else a fault of the
        console's own. Either way the operator must know the key did nothing they can see."""
        err = event.worker.error
        if event.state is not WorkerState.ERROR or err is None:
            return
        title, said = database_failure(err) or (
            "The console failed at that",
            f"{type(err).__name__}: {clean(str(err), limit=200)}",
        )
        self.notify(said, title=title, severity="error", timeout=10)
        self.post_message(ActionFailed(f"{title}: {said}"))

    def action_back(self) -> None:
        if self.marked():
            self.clear_marks()
            self.marks_changed()
            self.refresh_bindings()
        else:
            self.leave()

    def leave(self) -> None:
        """Pop this screen, only while it is the one on top: a key that reached it as the palette
        or a confirm was opening must not pop that from under the keys already sent to it."""
        if self.app.screen is self and len(self.app.screen_stack) > 1:
            self.app.pop_screen()


class DataScreen(ConsoleScreen):
    """A ConsoleScreen that loads data on a re-arming timer."""

    _timer: Timer | None = None
    _failures = 0

    async def fetch(self) -> Message:
        """Read the screen's data from the source and answer the message that carries it."""
        raise NotImplementedError

    def on_mount(self) -> None:
        self.reload()

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        if self.is_mounted:
            self.reload()

    def reload(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._load()

    @work(exclusive=True, group="refresh", exit_on_error=False)
    async def _load(self) -> None:
        interval: float = self.app.refresh_interval  # type: ignore[attr-defined]
        try:
            message = await self.fetch()
        except Exception as exc:  # the console never crashes on a lost connection or a bad answer
            self._failures += 1
            delay = min(MAX_BACKOFF, max(min(interval, 1.0), 2.0 ** (self._failures - 1)))
            self.post_message(LoadFailed(*self.source.describe_failure(exc), retry_in=delay))
        else:
            self._failures = 0
            self.post_message(message)
            self.post_message(Refreshed())
            delay = interval
        if self.is_attached:
            self._timer = self.set_timer(delay, self._tick)

    def _tick(self) -> None:
        self._timer = None
        if self.is_current:
            self._load()
        # else: on_screen_resume reloads when the screen is back on top
