"""The navigation line: every screen reachable from anywhere, by key, the current one marked.

Built from the action table's NAV, so a new screen appears here by adding its entry there. A
reserved entry (a screen a later issue brings) is shown dim with "soon".
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from console import actions


def nav_text(current: str | None) -> Text:
    t = Text()
    coming = [a for a in actions.NAV if a.coming]
    for a in actions.NAV:
        if a.coming:
            continue
        here = a.mode == current
        t.append(f" {a.key} ", style="bold reverse" if here else "bold")
        t.append(f"{a.title}{' ◂' if here else ''}", style="bold reverse" if here else "")
        t.append("  ")
    if coming:
        keys = f"{coming[0].key}-{coming[-1].key}" if len(coming) > 1 else coming[0].key
        t.append(f" {keys} ", style="dim")
        t.append(f"{', '.join(a.title for a in coming)}: soon", style="dim italic")
    return t


class NavBar(Static):
    def on_mount(self) -> None:
        self.update(nav_text(self.app.current_mode))
