"""The help screen: every key of every screen, generated from the action table."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from console import actions
from console.screens.base import ConsoleScreen


def help_text(*, read_only: bool) -> Text:
    t = Text()
    for scope, label in actions.SCOPES:
        rows = actions.for_scope(scope)
        if not rows:
            continue
        t.append(f"{label}\n", style="bold underline")
        for a in rows:
            t.append(f"  {actions.key_label(a):<8}", style="bold")
            t.append(f"{a.title:<17}")
            t.append(a.help)
            if a.mutating and read_only:
                t.append("  (read-only: not offered)", style="italic dim")
            t.append("\n")
        t.append("\n")
    t.append(f"  {'ctrl+p':<8}", style="bold")
    t.append(f"{'Commands':<17}the command palette: every action above, by name")
    return t


class HelpScreen(ConsoleScreen):
    SCOPE = "help"

    def crumb(self) -> str:
        return "Help"

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        with VerticalScroll(id="help-body"):
            yield Static(help_text(read_only=self.source.read_only), id="help-table")
        yield from self.compose_bottom()

    def action_help(self) -> None:
        self.app.pop_screen()
