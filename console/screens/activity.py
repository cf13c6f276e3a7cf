"""The activity log: what this operator did this session (every confirmed action, refused or
landed, with its fix) and when the database went away and came back. Newest first; kept in the
App for the session only (the audit trail in the database is the durable record)."""

from __future__ import annotations

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from console.format import clean, stamp
from console.screens.base import ConsoleScreen


def activity_text(entries: list, now) -> RenderableType:  # type: ignore[no-untyped-def, type-arg]
    """Newest first, as a grid: a long summary or fix wraps under itself, not under the time."""
    if not entries:
        return Text("Nothing yet: the actions you confirm this session are listed here.", style="dim italic")
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=9, no_wrap=True)
    grid.add_column(width=6, no_wrap=True)
    grid.add_column(ratio=1)
    for e in reversed(entries):
        said = Text(clean(e.summary, limit=300))
        if e.fix:
            said.append(f"\nfix: {clean(e.fix, limit=200)}", style="italic")
        outcome = Text("ok", style="bold") if e.ok else Text("FAILED", style="bold reverse")
        grid.add_row(Text(stamp(e.at, now), style="dim"), outcome, said)
    return grid


class ActivityScreen(ConsoleScreen):
    SCOPE = "activity"

    def crumb(self) -> str:
        return "Activity"

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        yield Static(Text("Activity this session", style="bold"), classes="screen-title")
        with VerticalScroll(id="activity-body"):
            yield Static(id="activity")
        yield from self.compose_bottom()

    def on_mount(self) -> None:
        self.show()
        self.query_one("#activity-body", VerticalScroll).focus()

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        self.show()

    def show(self) -> None:
        self.query_one("#activity", Static).update(activity_text(self.app.activity, self.source.now()))  # type: ignore[attr-defined]
