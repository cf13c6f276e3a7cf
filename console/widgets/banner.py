"""The database-down banner: shown while refreshes fail, gone on the first one that lands."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from console.format import clean
from engine.durations import relative


class Banner(Static):
    def on_mount(self) -> None:  # then redrawn by the app (JobsConsole._redraw_status)
        self._changed(self.app.db_error)  # type: ignore[attr-defined]

    def _changed(self, error: tuple[str, str, float] | None) -> None:
        if error is None:
            self.display = False
            return
        title, detail, retry_in = error
        text = Text()
        text.append(f" ✗ {clean(title, limit=60)} ", style="bold")
        text.append(clean(detail, limit=160))
        text.append(f"  · retrying {relative(retry_in)} (r: now)", style="italic")
        self.update(text)
        self.display = True
