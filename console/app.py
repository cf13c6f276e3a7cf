"""The jobs console App: screens, bindings, command palette. Wiring only.

Constructing it (stable; the demo and the CLI build it this way)::

    from console.app import JobsConsole
    from console.source import Source

    source = Source(engine, read_only=False)   # engine: engine.api.Engine (any driver)
    app = JobsConsole(source, read_only=False, refresh=2.0, queue=None, title=None, cli_dsn=None)
    app.run()

``source``: the console's only door to the engine (console/source.py; ``open_source(dsn)``
builds one). ``read_only``: True makes the source read-only (one way: a read-only source stays
so). ``refresh``: seconds between refreshes of the screen on top (adjustable live with + and -).
``queue``: start focused on one queue (Jobs and Dead letters open filtered on it, Overview's
cursor on it). ``title``: a label for the header (the demo says which backend it runs on).
``cli_dsn``: a DSN another terminal's `jobsctl` can use to reach this database (the demo's
throwaway server, whose DSN no one could read once the console covered the line it printed): the
Overview and the help show it whole, as a `JOBS_DSN=... jobsctl queues` line.
For tests and snapshots, ``console.demo.world.seeded_source()`` builds a deterministic Source.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from textual.actions import parse
from textual.app import App, SystemCommand
from textual.command import CommandPalette
from textual.filter import Monochrome, NoColor
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen

from console import actions, palette
from console.commands import Commands
from console.messages import ActionFailed, ActionSucceeded, LoadFailed, Navigate, Refreshed
from console.screens import MODES, screen_class
from console.screens.modal import ConsolePalette
from console.source import Source
from console.widgets.banner import Banner
from console.widgets.header import StatusHeader
from console.widgets.nav import NavBar

INTERVALS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
ACTIVITY_KEPT = 200  # entries of the session's activity log kept


@dataclass(frozen=True)
class Activity:
    """One line of the activity log: what this operator did (or what happened to the
    connection) this session."""

    at: datetime
    ok: bool
    summary: str
    fix: str | None = None


class JobsConsole(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "jobs-console"
    BINDINGS = actions.bindings("global")
    MODES = MODES
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = {Commands}  # the system commands, found by name or description (console/commands.py)

    # Watched by the header and the banner.
    last_refresh: reactive[datetime | None] = reactive(None)
    refresh_interval: reactive[float] = reactive(2.0)
    db_error: reactive[tuple[str, str, float] | None] = reactive(None)

    def __init__(
        self,
        source: Source,
        *,
        read_only: bool = False,
        refresh: float = 2.0,
        queue: str | None = None,
        title: str | None = None,
        cli_dsn: str | None = None,
    ) -> None:
        super().__init__()
        palette.use(no_color=self.no_color)
        if self.no_color:
            # NO_COLOR: no colour at all. Textual's own choice (Monochrome) still paints greys,
            # and a state's colour turned grey sank into its background (dark red: 237 on 235);
            # NoColor leaves the terminal's own colours, and the palette speaks in attributes.
            self._filters = [NoColor() if isinstance(f, Monochrome) else f for f in self._filters]
        if read_only and not source.read_only:
            source.set_read_only()
        self.source = source
        self.focus_queue = queue
        self.label = title
        self.cli_dsn = cli_dsn
        self.set_reactive(JobsConsole.refresh_interval, float(refresh))
        source.set_refresh(float(refresh))
        self.activity: list[Activity] = []

    def on_mount(self) -> None:
        self.switch_mode("overview")
        if self.source.read_only_why:
            self.notify(f"Read-only: {self.source.read_only_why}.", timeout=8)

    # --- the header and banner --------------------------------------------------------------
    # One watcher here instead of one per screen's header and banner: Textual (8.2.8) drops a
    # widget's watch on another object only when that attribute next changes, so every popped
    # screen's banner (db_error rarely changes) stayed alive in the app's watcher list.

    def watch_last_refresh(self) -> None:
        self._redraw_status()

    def watch_refresh_interval(self) -> None:
        self.source.set_refresh(self.refresh_interval)
        self._redraw_status()

    def watch_db_error(self) -> None:
        self._redraw_status()

    def _redraw_status(self) -> None:
        if not self.is_running:
            return
        for screen in self.screen_stack:  # a header not on top skips it (StatusHeader._changed)
            for header in screen.query(StatusHeader):
                header._changed()
            for banner in screen.query(Banner):
                banner._changed(self.db_error)

    # --- messages from the screens -------------------------------------------------------------

    def on_load_failed(self, message: LoadFailed) -> None:
        if self.db_error is None:
            self._note_activity(False, f"lost the database: {message.title}: {message.detail}")
        self.db_error = (message.title, message.detail, message.retry_in)

    def on_refreshed(self, message: Refreshed) -> None:
        if self.db_error is not None:
            self._note_activity(True, "database back: refreshes land again")
        self.db_error = None
        self.last_refresh = self.source.now()

    def on_action_succeeded(self, message: ActionSucceeded) -> None:
        self._note_activity(True, message.summary)

    def on_action_failed(self, message: ActionFailed) -> None:
        self._note_activity(False, message.summary, message.fix)

    def _note_activity(self, ok: bool, summary: str, fix: str | None = None) -> None:
        self.activity.append(Activity(self.source.now(), ok, summary, fix))
        del self.activity[:-ACTIVITY_KEPT]
        for screen in self.screen_stack[-1:]:  # the Activity screen, on top: redrawn
            changed = getattr(screen, "activity_changed", None)
            if changed is not None and screen.is_mounted:
                changed()

    def on_navigate(self, message: Navigate) -> None:
        """Push the screen asked for. A screen of the same class already in the stack is popped
        back to first (opening job B from job A's why replaces job A), so the stack is never
        deeper than the kinds of screen there are, and one Escape is one level back."""
        message.stop()
        if self._in_modal() or self._quitting():
            return
        cls = screen_class(message.kind)
        stack = self.screen_stack
        for i, screen in enumerate(stack[1:], start=1):
            if type(screen) is cls:
                for _ in range(len(stack) - i):
                    self.pop_screen()
                break
        self.push_screen(cls(**message.args))

    # --- global actions --------------------------------------------------------------------

    def _in_modal(self) -> bool:
        """The user is in the palette or a confirm: a navigation (a number key that reached the app
        while the palette was opening, a message already on its way) must not pop it from under
        the keys already sent to it."""
        return isinstance(self.screen, ModalScreen)

    def _quitting(self) -> bool:
        """The console is on its way out (q): a key typed behind the q (a, ?, a number) reached it
        while its screens were being taken down, and a screen opened then had no widgets to fill."""
        return self.return_code is not None

    def action_command_palette(self) -> None:
        """Textual's palette, answered once (console/screens/modal.py)."""
        if self.use_command_palette and not CommandPalette.is_open(self):  # type: ignore[arg-type]
            self.push_screen(ConsolePalette(id="--command-palette"))

    def action_goto(self, mode: str) -> None:
        """A number key goes to that screen's root (its list), never to a drill-down left open."""
        if self._in_modal() or self._quitting():
            return
        self.switch_mode(mode)
        while len(self.screen_stack) > 1:
            self.pop_screen()
        for bar in self.screen.query(NavBar):
            bar.redraw()

    def action_activity(self) -> None:
        self._toggle("activity")

    def action_help(self) -> None:
        # The help opens on the keys of the screen it was asked from.
        self._toggle("help", {"scope": getattr(self.screen, "SCOPE", None)})

    def _toggle(self, kind: str, args: dict[str, object] | None = None) -> None:
        """Open the help or the activity screen; its own key again closes it (the key is the app's:
        the screen's own binding of it is never reached)."""
        if type(self.screen) is screen_class(kind):
            self.screen.leave()  # type: ignore[attr-defined]
        else:
            self.post_message(Navigate(kind, args or {}))

    def action_sort(self) -> None:
        sort = getattr(self.screen, "sort_table", None)
        if sort is not None:
            sort(False)

    def action_sort_reverse(self) -> None:
        sort = getattr(self.screen, "sort_table", None)
        if sort is not None:
            sort(True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("sort", "sort_reverse"):  # offered where there is a table to sort
            check = getattr(self.screen, "table", None)
            return check is not None and check() is not None
        return True

    def action_refresh_now(self) -> None:
        reload = getattr(self.screen, "reload", None)
        if reload is not None:
            reload()

    def action_interval(self, step: int) -> None:
        now = min(range(len(INTERVALS)), key=lambda i: abs(INTERVALS[i] - self.refresh_interval))
        self.refresh_interval = INTERVALS[max(0, min(len(INTERVALS) - 1, now + step))]
        self.notify(f"Refreshing every {self.refresh_interval:g}s", timeout=2)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        scope = getattr(screen, "SCOPE", "global")
        for a in actions.offered(scope, read_only=self.source.read_only):
            # Asked with the action's parameters, as the footer asks: "Retry all" (bulk('retry'))
            # under a filter of running jobs is left out of both.
            if a.action in ("help", "quit") or screen.check_action(a.name, parse(a.action)[2]) is False:
                continue
            label = f"{a.title}  [{actions.key_label(a)}]"
            yield SystemCommand(literal(label), literal(a.help), _runner(screen, a))
        yield SystemCommand(literal("Help  [?]"), "every key of every screen", self.action_help)
        yield SystemCommand(literal("Quit  [q]"), "leave the console", self.action_quit)


def literal(text: str) -> str:
    """``text`` as markup that shows it as it is. The palette reads its names as markup, and
    Textual's ``escape`` leaves a bracket before a capital alone, so "[X]" (Retry all's key) was
    read as a style and vanished: every bracket is escaped."""
    return text.replace("[", "\\[")


def _runner(screen: Screen, a: actions.Action):  # type: ignore[no-untyped-def]
    target = screen if a.scope != "global" else screen.app

    async def run() -> None:
        # The screen the palette was opened on can be gone by the time the command runs (a key
        # typed behind the Enter that chose it went back): its action has nothing left to act on.
        if target is screen and not screen.is_attached:
            return
        await target.run_action(a.action)

    return run
