"""A DataTable whose rows are keyed (a job id, a queue name) and updated in place.

A refresh that brings the same keys in the same order only rewrites the cells that changed, so the
cursor and the scroll position stay exactly where the operator left them (dolphie's approach). When
the order changes (new jobs arrived at the top), the table is rebuilt and the cursor follows its
row by key, not by index.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.widgets import DataTable

Cells = tuple[Text | str, ...]


Column = tuple[str, str] | tuple[str, str, int]  # label, key[, fixed width]


class KeyedTable(DataTable[Text | str]):
    # Home and End move the cursor to the first and last row (DataTable only scrolls sideways).
    BINDINGS = [Binding("home", "scroll_top", show=False), Binding("end", "scroll_bottom", show=False)]

    def __init__(self, columns: Sequence[Column], *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=False)
        self._columns = list(columns)
        self._keys: list[str] = []
        self._cells: dict[str, Cells] = {}
        self._reselect: str | None = None  # the row the cursor was on before the columns changed
        self._to_top = False  # the next sync puts the cursor on the first row (a new filter)

    def on_mount(self) -> None:
        for label, key, *width in self._columns:
            self.add_column(label, key=key, width=width[0] if width else None)

    async def _on_idle(self, event: events.Idle) -> None:
        # DataTable measures new rows on idle but keeps lines rendered at the old column widths
        # (textual 8.2.8): drop them when a width changed, or a long name stays cut at its label.
        before = [c.get_render_width(self) for c in self.ordered_columns]
        await super()._on_idle(event)
        if [c.get_render_width(self) for c in self.ordered_columns] != before:
            self._clear_caches()
            self.refresh()

    @property
    def column_keys(self) -> list[str]:
        return [key for _, key, *_ in self._columns]

    def set_columns(self, columns: Sequence[Column]) -> bool:
        """Swap the columns (a narrower set for a narrow terminal); the next ``sync`` refills the
        rows, the cursor following its row by key. Answers whether anything changed."""
        if list(columns) == self._columns:
            return False
        self._columns = list(columns)
        if self.is_mounted:
            selected = self.selected_key
            self.clear(columns=True)
            for label, key, *width in self._columns:
                self.add_column(label, key=key, width=width[0] if width else None)
            self._keys, self._cells = [], {}
            self._reselect = selected
        return True

    @property
    def keys(self) -> list[str]:
        return list(self._keys)

    @property
    def selected_key(self) -> str | None:
        if not self._keys or self.cursor_row < 0 or self.cursor_row >= len(self._keys):
            return None
        return self._keys[self.cursor_row]

    def restart(self) -> None:
        """The rows are about to be a different set (a new filter): the next ``sync`` puts the
        cursor on the first row instead of following the old one."""
        self._to_top = True

    def sync(self, rows: Sequence[tuple[str, Cells]]) -> None:
        keys = [k for k, _ in rows]
        if self._to_top:
            self._to_top = False
            self._keys, self._reselect = [], None
            self.move_cursor(row=0, animate=False, scroll=False)
            self.scroll_to(y=0, animate=False, immediate=True)
        if keys == self._keys:
            for key, cells in rows:
                old = self._cells.get(key)
                if old == cells:
                    continue
                for (_, col, *_w), value, before in zip(self._columns, cells, old or (None,) * len(cells)):
                    if value != before:
                        self.update_cell(key, col, value, update_width=True)
                self._cells[key] = cells
            return
        selected = self.selected_key or self._reselect
        self._reselect = None
        index = self.cursor_row
        scroll_y = self.scroll_y
        self.clear()
        for key, cells in rows:
            self.add_row(*cells, key=key)
        self._keys = keys
        self._cells = dict(rows)
        if keys:
            row = keys.index(selected) if selected in keys else min(max(index, 0), len(keys) - 1)
            self.move_cursor(row=row, animate=False, scroll=False)
            self.scroll_to(y=scroll_y, animate=False, immediate=True)
