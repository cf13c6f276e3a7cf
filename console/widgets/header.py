"""The header line: which database, which driver, read-only or not, when the data was read."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual.widgets import Static

from console import palette
from console.format import clean, duration, stamp
from console.widgets.fresh import update_changed


class StatusHeader(Static):
    # Redrawn by the app when what it shows changes (JobsConsole._redraw_status), not by a watch
    # of its own: a widget's watch on the app outlives the widget (see the app).
    def on_mount(self) -> None:
        self._changed()

    def _changed(self, *_: object) -> None:
        # Every screen has a header watching the app; only the one on top is seen, and a screen
        # coming back to the top redraws its header (ConsoleScreen.on_screen_resume).
        if self.screen is not self.app.screen and self.screen.is_mounted:
            return
        app = self.app
        source = app.source  # type: ignore[attr-defined]
        last: datetime | None = app.last_refresh  # type: ignore[attr-defined]
        text = Text()
        text.append(" jobs-console ", style="bold reverse")
        # What matters most first, so an 80-column terminal still shows it: which database (and
        # the context's name), how fresh, whether writable, whether connected.
        label = getattr(app, "label", None)
        if label:
            text.append(f" {clean(label, limit=20)} ", style="bold reverse")
        text.append(f" {clean(source.database, limit=36)}", style="bold")
        text.append(f" {stamp(last, last) if last else '—'}", style="bold")
        text.append(f" every {duration(app.refresh_interval)}", style="dim")  # type: ignore[attr-defined]
        text.append("  ")
        if source.read_only:
            text.append(" READ-ONLY ", style=palette.style("flag"))
        else:
            text.append("read-write", style="dim")
        if app.db_error is not None:  # type: ignore[attr-defined]
            text.append("  DISCONNECTED (data as of the time shown)", style=palette.style("alert"))
        text.append(f"  {source.driver}", style="dim")
        update_changed(self, text, layout=False)  # one line, always: no layout to redo
