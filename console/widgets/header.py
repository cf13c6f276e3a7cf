"""The header line: which database, which driver, read-only or not, when the data was read."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual.widgets import Static

from console import palette
from console.format import clean, stamp
from console.widgets.fresh import update_changed
from engine.durations import duration

DATABASE_AT_LEAST = 12  # cells of the database's name the long DISCONNECTED sentence leaves it


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
        width = self.size.width or app.size.width
        # What matters most is kept whole, so an 80-column terminal still shows it: the context's
        # name, how fresh, whether writable, whether connected. The database's name comes next:
        # the refresh interval is left out before it is cut short (with "…"), and the driver is
        # named only in what room remains.
        head = Text()
        head.append(" jobs-console ", style="bold reverse")
        label = getattr(app, "label", None)
        if label:
            head.append(f" {clean(label, limit=20)} ", style="bold reverse")
        fresh = Text(f" {stamp(last, last) if last else '—'}", style="bold")
        every = Text(f" every {duration(app.refresh_interval)}", style="dim")  # type: ignore[attr-defined]
        state = Text("  ")
        if source.read_only:
            state.append(" READ-ONLY ", style=palette.style("flag"))
        else:
            state.append("read-write", style="dim")
        if app.db_error is not None:  # type: ignore[attr-defined]
            said = "  DISCONNECTED (data as of the time shown)"
            if head.cell_len + fresh.cell_len + state.cell_len + len(said) + 1 + DATABASE_AT_LEAST > width:
                said = "  DISCONNECTED"
            state.append(said, style=palette.style("alert"))
        database = clean(source.database, limit=36)
        room = width - head.cell_len - fresh.cell_len - state.cell_len - 1
        if len(database) + every.cell_len > room:
            every = Text()
        if len(database) > room:
            database = clean(source.database, limit=max(6, room))
        text = head
        text.append(f" {database}", style="bold")
        text.append_text(fresh)
        text.append_text(every)
        text.append_text(state)
        driver = f"  {source.driver}"
        if text.cell_len + len(driver) <= width:
            text.append(driver, style="dim")
        update_changed(self, text, layout=False)  # one line, always: no layout to redo

    def on_resize(self) -> None:
        self._changed()
