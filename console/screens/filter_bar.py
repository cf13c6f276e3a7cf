"""What a screen with a filter bar does with it: ``/`` opens it, a filter applied re-reads from
the first page with the cursor on the first row, and Escape leaves the bar before it leaves the
screen. The grammar lives in the widget (console/widgets/filter_bar.py), one for every screen."""

from __future__ import annotations

import re
from dataclasses import replace

from textual import work

from console.widgets.filter_bar import FilterBar
from console.widgets.keyed_table import KeyedTable
from console.widgets.nav import NavBar
from engine.projections import JobFilter

# An id's fragment as typed from a table (its tail, the short id) or a log: hex digits and dashes.
_SHORT_ID = re.compile(r"[0-9a-fA-F-]{6,35}")


class Filtered:
    """Mixed into a DataScreen that has a FilterBar, a ``where`` filter and a table."""

    TABLE_ID: str  # the table focus returns to when the bar is left
    where: JobFilter

    def scoped(self, where: JobFilter) -> JobFilter:
        """The filter this screen keeps from what was typed (dead letters drop the state)."""
        return where

    def on_filter_bar_applied(self, message: FilterBar.Applied) -> None:
        message.stop()
        where = self.scoped(message.where)
        if where.search is not None and _SHORT_ID.fullmatch(where.search):
            self._find_then_apply(where)
        else:
            self.apply_filter(where)

    @work(group="filter", exclusive=True, exit_on_error=False)
    async def _find_then_apply(self, where: JobFilter) -> None:
        """A short id as every table shows it (an id's tail) names its job, which the list then
        shows; a head many ids share, or a fragment no id has, searches as it was typed."""
        assert where.search is not None
        try:
            found = await self.source.resolve_job(where.search)  # type: ignore[attr-defined]
        except Exception:  # ambiguous, not found, or no answer: the search as typed says so
            found = None
        self.apply_filter(where if found is None else replace(where, search=found))

    def apply_filter(self, where: JobFilter) -> None:
        self.where = where
        self.restart_pages()
        self.query_one(f"#{self.TABLE_ID}", KeyedTable).restart()  # type: ignore[attr-defined]
        self.leave_filter(not self.where.empty)
        for bar in self.query(NavBar):  # type: ignore[attr-defined]
            bar.redraw()  # the breadcrumb names the filter
        self.reload()  # type: ignore[attr-defined]

    def restart_pages(self) -> None:
        """Forget any pages seen under the old filter."""

    def action_filter(self) -> None:
        bar = self.query_one(FilterBar)  # type: ignore[attr-defined]
        bar.display = True
        bar.focus()

    def leave_filter(self, shown: bool) -> None:
        """Hide the bar unless a filter is in force, and hand focus back to the table. The bar
        reads the filter in force: text typed and left with Escape, or a word the screen does not
        keep, would otherwise stay on it as if it filtered the rows below."""
        bar = self.query_one(FilterBar)  # type: ignore[attr-defined]
        bar.show(self.where)
        bar.display = shown
        self.query_one(f"#{self.TABLE_ID}", KeyedTable).focus()  # type: ignore[attr-defined]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # query, not query_one: Textual asks this of a screen whose widgets are already removed.
        if action == "back" and any(bar.has_focus for bar in self.query(FilterBar)):  # type: ignore[attr-defined]
            return True
        return super().check_action(action, parameters)  # type: ignore[misc]

    def action_back(self) -> None:
        if self.query_one(FilterBar).has_focus:  # type: ignore[attr-defined]
            self.leave_filter(not self.where.empty)
        else:
            super().action_back()  # type: ignore[misc]
