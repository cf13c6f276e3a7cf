"""The help screen: every key of every screen, generated from the action table."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from console import actions
from console.format import another_terminal, packed
from console.screens.base import ConsoleScreen

PALETTE = (
    "the command palette: the actions of the screen you open it on and those under Everywhere, "
    "found by name or by words of their description"
)


def help_text(*, read_only: bool, first: str | None = None, cli_dsn: str | None = None, width: int = 0) -> Group:
    """Every scope's keys as a grid: a description wraps under itself, never under the keys.
    ``first``: the scope of the screen the help was opened on, whose keys come first (marked so),
    then every scope in the table's order. ``cli_dsn``: the database's DSN for another terminal's
    `jobsctl` (the demo's), said first, its lines broken to ``width`` around the DSN, never in it."""
    parts: list[RenderableType] = []
    if cli_dsn:
        parts += [packed(another_terminal(cli_dsn), width, sep=" "), Text("")]
    scopes = sorted(actions.SCOPES, key=lambda s: s[0] != first)  # stable: the rest keep their order
    for scope, label in scopes:
        rows = actions.for_scope(scope)
        if not rows:
            continue
        heading = Text(label, style="bold underline")
        if scope == first and scope != "global":
            heading.append("  (this screen)", style="dim")
        parts.append(heading)
        grid = _grid()
        for a in rows:
            text = Text(a.help)
            if a.mutating and read_only:
                text.append("  (read-only: not offered)", style="italic dim")
            grid.add_row(Text(f"  {actions.key_label(a)}", style="bold"), a.title, text)
        parts += [grid, Text("")]
    grid = _grid()
    grid.add_row(Text("  ctrl+p", style="bold"), "Commands", PALETTE)
    parts.append(grid)
    return Group(*parts)


def _grid() -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=9, no_wrap=True)  # the indent and the key
    grid.add_column(width=20, no_wrap=True)  # the longest title ("Cancel with children") whole
    grid.add_column(ratio=1)
    return grid


class HelpScreen(ConsoleScreen):
    SCOPE = "help"

    def __init__(self, *, scope: str | None = None) -> None:
        super().__init__()
        self.first = scope  # the scope of the screen it was opened on: its keys come first

    def crumb(self) -> str:
        return "Help"

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        with VerticalScroll(id="help-body"):
            dsn = getattr(self.app, "cli_dsn", None)
            width = max(0, self.app.size.width - 4)  # the body's padding and scrollbar
            table = help_text(read_only=self.source.read_only, first=self.first, cli_dsn=dsn, width=width)
            yield Static(table, id="help-table")
        yield from self.compose_bottom()
