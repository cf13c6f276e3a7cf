"""The activity log: what this operator did this session (every confirmed action, refused or
landed, with its fix) and when the database went away and came back. Newest first; kept in the
App for the session only (the audit trail in the database is the durable record)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from console.format import clean, stamp
from console.screens.base import ConsoleScreen


def activity_text(entries: list, now) -> Text:  # type: ignore[no-untyped-def, type-arg]
    if not entries:
        return Text("Nothing yet: the actions you confirm this session are listed here.", style="dim italic")
    t = Text()
    for i, e in enumerate(reversed(entries)):
        if i:
            t.append("\n")
        t.append(f"{stamp(e.at, now):<9} ", style="dim")
        t.append("ok    " if e.ok else "FAILED", style="bold" if e.ok else "bold reverse")
        t.append(f" {clean(e.summary, limit=300)}")
        if e.fix:
            t.append(f"\n          fix: {clean(e.fix, limit=200)}", style="italic")
    return t


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

    def action_activity(self) -> None:
        self.leave()
