"""The filter bar the Jobs and Dead letters screens share: Escape leaves the bar before it leaves
the screen, and a filter the engine refuses is shown as its code, cause and fix."""

from __future__ import annotations

from textual.widgets import Input

from console.widgets.keyed_table import KeyedTable
from engine.errors import JobsError
from engine.projections import JobFilter


class FilterBar:
    """Mixed into a DataScreen that has an ``#filter`` Input, a ``where`` filter and a table."""

    TABLE_ID: str  # the table focus returns to when the bar is left
    where: JobFilter

    def filter_refused(self, err: JobsError) -> None:
        self.notify(f"{err.cause}\nfix: {err.fix}", title=err.code, severity="error", timeout=6)  # type: ignore[attr-defined]

    def leave_filter(self, shown: bool) -> None:
        """Hide the bar unless a filter is in force, and hand focus back to the table."""
        self.query_one("#filter", Input).display = shown  # type: ignore[attr-defined]
        self.query_one(f"#{self.TABLE_ID}", KeyedTable).focus()  # type: ignore[attr-defined]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "back" and self.is_mounted and self.query_one("#filter", Input).has_focus:  # type: ignore[attr-defined]
            return True
        return super().check_action(action, parameters)  # type: ignore[misc]

    def action_back(self) -> None:
        if self.query_one("#filter", Input).has_focus:  # type: ignore[attr-defined]
            self.leave_filter(not self.where.empty)
        else:
            super().action_back()  # type: ignore[misc]
