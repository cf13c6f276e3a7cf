"""The navigation line: every screen reachable from anywhere, by key, the shown one marked, and
the breadcrumb of where you are (Jobs › billing › job 0d64…).

Built from the action table's NAV, so a new screen appears here by adding its entry there. When
every title does not fit the terminal's width, the other screens' titles are shortened (80
columns hold them so); with a breadcrumb to show, or when even those do not fit, the entries not
shown are their keys only, so the shown one is always named.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from console import actions

# A title shortened where every full title does not fit (80 columns).
SHORT = {"dead_letters": "Dead"}


def nav_text(current: str | None, crumbs: Sequence[str] = (), width: int | None = None) -> Text:
    full = _entries(current, titled=len(crumbs) <= 1)
    if width is not None and len(crumbs) <= 1 and full.cell_len > width:
        full = _entries(current, titled=True, short=True)
    if width is not None and len(crumbs) <= 1 and full.cell_len > width:
        full = _entries(current, titled=False)
    if len(crumbs) > 1:
        full.append(" " + " › ".join(crumbs), style="bold")
    return full


def _entries(current: str | None, *, titled: bool, short: bool = False) -> Text:
    """Every NAV key; the shown screen's title always, the others' only when ``titled`` (their
    short titles when ``short``)."""
    t = Text()
    for a in actions.NAV:
        here = a.mode == current
        t.append(f" {a.key} ", style="bold reverse" if here else "bold")
        if here or titled:
            title = SHORT.get(a.mode or "", a.title) if short else a.title
            t.append(f"{title}{' ◂' if here else ''}", style="bold reverse" if here else "")
            t.append(" ")
    return t


class NavBar(Static):
    def on_mount(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        """Mark the shown screen's entry (a Jobs list opened from the Overview marks Jobs) and
        spell the stack out as a breadcrumb."""
        stack = [s for s in self.app.screen_stack if hasattr(s, "crumb")]
        if self.screen in stack:
            stack = stack[: stack.index(self.screen) + 1]
        mode = next((s.MODE for s in reversed(stack) if getattr(s, "MODE", None)), self.app.current_mode)
        width = self.size.width or self.app.size.width
        self.update(nav_text(mode, [s.crumb() for s in stack], width))

    def on_resize(self) -> None:
        self.redraw()
