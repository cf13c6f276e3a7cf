"""A DataTable whose rows are keyed (a job id, a queue name) and updated in place, and which the
operator can sort by any column and mark rows of for an action on the marked set.

A refresh that brings the same keys in the same order only rewrites the cells that changed, so the
cursor and the scroll position stay exactly where the operator left them (dolphie's approach). When
the order changes (new jobs arrived at the top), the table is rebuilt and the cursor follows its
row by key, not by index.

Sorting is the table's own: ``cycle_sort`` moves it to the next column (ascending), then back to
the order the rows came in; ``reverse_sort`` flips it; clicking a header sorts by that column. A
screen says how a column sorts with ``sort_value`` (a number, not the text it shows: "3m20s ago"
does not sort as text); without it the cell's text is used. The sorted column's header carries
an arrow. The rows sorted are the rows the table was given: a screen whose data the engine pages
says so (the Jobs list sorts the page shown).

Marks: ``toggle_mark`` marks or unmarks the row under the cursor and moves down; a marked row's
first cell starts with ✓ (a mark that reads without colour). Marks are keys, so they follow their
rows through refreshes and sorting; a row that leaves the table takes its mark with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.filter import dim_color
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

Cells = tuple[Text | str, ...]
Column = tuple[str, str] | tuple[str, str, int]  # label, key[, fixed width]
MARK = "✓ "
_NOT_DIM = Style(dim=False)


def _even(segment: Segment) -> Segment:
    """A cursor-row segment whose dim text keeps the row's highlight. The cursor is drawn reversed
    (app.tcss), and dim on reversed text fades the colour that becomes the background: a dim cell
    ("—", a 0 count, an age) would sit on a darker block than the rest of the row. Here the faded
    colour is the text's, set outright, and the background stays the row's."""
    style = segment.style
    if style is None or not (style.dim and style.reverse):
        return segment
    fg, bg = style.color, style.bgcolor
    if fg is None or bg is None or fg.triplet is None or bg.triplet is None:
        return Segment(segment.text, style + _NOT_DIM, segment.control)
    faded = Style(color=fg, bgcolor=dim_color(fg, bg), dim=False)
    return Segment(segment.text, style + faded, segment.control)


def _label(label: str, arrow: str = "") -> Text:
    return Text(f"{label} {arrow}" if arrow else label)


class KeyedTable(DataTable[Text | str]):
    # Home and End move the cursor to the first and last row (DataTable only scrolls sideways).
    BINDINGS = [Binding("home", "scroll_top", show=False), Binding("end", "scroll_bottom", show=False)]

    def __init__(self, columns: Sequence[Column], *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=False)
        self._columns = list(columns)
        self._keys: list[str] = []
        self._cells: dict[str, Cells] = {}
        self._given: list[tuple[str, Cells]] = []  # the rows of the last sync, in the order given
        self._reselect: str | None = None  # the row the cursor was on before the columns changed
        self._to_top = False  # the next sync puts the cursor on the first row (a new filter)
        self.sort_by: tuple[str, bool] | None = None  # (column key, descending)
        self.sort_value: Callable[[str, str], Any] | None = None  # (row key, column key) -> sortable
        self.marked: set[str] = set()

    def on_mount(self) -> None:
        self._add_columns()

    def _add_columns(self) -> None:
        for label, key, *width in self._columns:
            self.add_column(self._header(label, key), key=key, width=width[0] if width else None)

    def _header(self, label: str, key: str) -> Text:
        if self.sort_by is None or self.sort_by[0] != key:
            return _label(label)
        return _label(label, "▼" if self.sort_by[1] else "▲")

    async def _on_idle(self, event: events.Idle) -> None:
        # DataTable measures new rows on idle but keeps lines rendered at the old column widths
        # (textual 8.2.8): drop them when a width changed, or a long name stays cut at its label.
        before = [c.get_render_width(self) for c in self.ordered_columns]
        await super()._on_idle(event)
        if [c.get_render_width(self) for c in self.ordered_columns] != before:
            self._clear_caches()
            self.refresh()

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> list[list[Segment]]:
        lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        if not cursor:
            return lines
        return [[_even(segment) for segment in line] for line in lines]

    @property
    def column_keys(self) -> list[str]:
        return [key for _, key, *_ in self._columns]

    def set_columns(self, columns: Sequence[Column]) -> bool:
        """Swap the columns (a narrower set for a narrow terminal); the next ``sync`` refills the
        rows, the cursor following its row by key. Answers whether anything changed."""
        if list(columns) == self._columns:
            return False
        self._columns = list(columns)
        if self.sort_by is not None and self.sort_by[0] not in self.column_keys:
            self.sort_by = None
        if self.is_mounted:
            selected = self.selected_key
            self.clear(columns=True)
            self._add_columns()
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

    # --- sorting ---------------------------------------------------------------------------------

    def sort_title(self) -> str | None:
        """``attempt ▼``: the column sorted by and its direction, None in the given order."""
        if self.sort_by is None:
            return None
        label = next(label for label, key, *_ in self._columns if key == self.sort_by[0])
        return f"{label} {'▼' if self.sort_by[1] else '▲'}"

    def cycle_sort(self) -> None:
        """The next column, ascending; after the last one, the order the rows came in."""
        keys = self.column_keys
        if self.sort_by is None:
            self._sort(keys[0], False)
        elif keys.index(self.sort_by[0]) + 1 < len(keys):
            self._sort(keys[keys.index(self.sort_by[0]) + 1], False)
        else:
            self._sort(None, False)

    def reverse_sort(self) -> None:
        """Flip the direction (sorting by the first column, descending, when there was no sort)."""
        if self.sort_by is None:
            self._sort(self.column_keys[0], True)
        else:
            self._sort(self.sort_by[0], not self.sort_by[1])

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        key = str(event.column_key.value)
        same = self.sort_by is not None and self.sort_by[0] == key
        self._sort(key, not self.sort_by[1] if same and self.sort_by else False)

    def _sort(self, key: str | None, descending: bool) -> None:
        self.sort_by = None if key is None else (key, descending)
        for label, col, *_ in self._columns:
            column = self.columns.get(ColumnKey(col))
            if column is not None:
                column.label = self._header(label, col)
        self._clear_caches()
        self.refresh()
        self.sync(self._given)

    def _value(self, key: str, cells: Cells, col: str) -> Any:
        if self.sort_value is not None:
            value = self.sort_value(key, col)
            if value is not None:
                return value
        cell = cells[self.column_keys.index(col)]
        return cell.plain if isinstance(cell, Text) else str(cell)

    def _ordered(self, rows: Sequence[tuple[str, Cells]]) -> list[tuple[str, Cells]]:
        if self.sort_by is None:
            return list(rows)
        col, descending = self.sort_by
        values = {key: self._value(key, cells, col) for key, cells in rows}
        # Numbers before text, each in order; the given order breaks ties (a stable sort).
        numeric = sorted((r for r in rows if isinstance(values[r[0]], (int, float))), key=lambda r: values[r[0]])
        text = sorted((r for r in rows if not isinstance(values[r[0]], (int, float))), key=lambda r: str(values[r[0]]))
        ordered = numeric + text
        return ordered[::-1] if descending else ordered

    # --- marks -----------------------------------------------------------------------------------

    def toggle_mark(self) -> None:
        key = self.selected_key
        if key is None:
            return
        self.marked ^= {key}
        self._show_mark(key)
        if self.cursor_row + 1 < len(self._keys):
            self.move_cursor(row=self.cursor_row + 1, animate=False)

    def clear_marks(self) -> None:
        marked, self.marked = self.marked, set()
        for key in marked:
            self._show_mark(key)

    def marked_keys(self) -> list[str]:
        """The marked rows, in the order shown."""
        return [k for k in self._keys if k in self.marked]

    def _decorated(self, key: str, cells: Cells) -> Cells:
        if key not in self.marked or not cells:
            return cells
        first = cells[0] if isinstance(cells[0], Text) else Text(str(cells[0]))
        return (Text(MARK, style="bold") + first, *cells[1:])

    def _show_mark(self, key: str) -> None:
        cells = self._cells.get(key)
        if cells:
            self.update_cell(key, self.column_keys[0], self._decorated(key, cells)[0], update_width=True)

    # --- rows ------------------------------------------------------------------------------------

    def sync(self, rows: Sequence[tuple[str, Cells]]) -> None:
        self._given = list(rows)
        rows = self._ordered(rows)
        keys = [k for k, _ in rows]
        gone = len(self.marked) - len(self.marked.intersection(keys))
        if gone:  # said, so an action after this refresh is not taken to reach them
            self.marked.intersection_update(keys)
            said = "1 marked row has" if gone == 1 else f"{gone} marked rows have"
            self.notify(f"{said} left the list (changed since it was read): unmarked.", timeout=5)
        # A new set of rows (restart) is rebuilt whatever it holds, none included: the rows shown
        # are the old set's until then.
        new_set = self._to_top
        if new_set:
            self._to_top = False
            self._reselect = None
            self.move_cursor(row=0, animate=False, scroll=False)
            self.scroll_to(y=0, animate=False, immediate=True)
        if keys == self._keys and not new_set:
            for key, cells in rows:
                old = self._cells.get(key)
                if old == cells:
                    continue
                shown = self._decorated(key, cells)
                for (_, col, *_w), value, before in zip(self._columns, shown, old or (None,) * len(cells)):
                    if value != before or col == self.column_keys[0]:
                        self.update_cell(key, col, value, update_width=True)
                self._cells[key] = cells
            return
        selected = self.selected_key or self._reselect
        self._reselect = None
        index = self.cursor_row
        scroll_y = self.scroll_y
        self.clear()
        # DataTable only ever widens a column: a column sized to rows gone (a page before, a wider
        # filter) is sized again to the rows it now holds.
        for column in self.columns.values():
            if column.auto_width:
                column.content_width = column.label.cell_len
        for key, cells in rows:
            self.add_row(*self._decorated(key, cells), key=key)
        self._keys = keys
        self._cells = dict(rows)
        if keys:
            row = keys.index(selected) if selected in keys else min(max(index, 0), len(keys) - 1)
            self.move_cursor(row=row, animate=False, scroll=False)
            self.scroll_to(y=scroll_y, animate=False, immediate=True)
