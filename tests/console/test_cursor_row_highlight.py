"""The selected row of every table is one even highlight: a cell drawn dim ("—" for none, a 0
count, an age) sits on the same background as the rest of the row, not on a darker block."""

from __future__ import annotations

import pytest
from rich.color import Color
from rich.segment import Segment
from rich.text import Text
from textual.filter import dim_color

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.widgets.keyed_table import KeyedTable
from tests.console.conftest import SIZE, settle

SCREENS = {"2": "Jobs", "3": "Dead letters", "4": "Workers", "5": "Schedules", "6": "Outbox", "7": "Backfills"}


def _background(segment: Segment) -> Color | None:
    """The background a terminal shows under ``segment``: reversed text shows its colour there,
    faded toward the background when dim (as Textual turns dim into a colour)."""
    style = segment.style
    assert style is not None
    if not style.reverse:
        return style.bgcolor
    if style.dim and style.color is not None and style.bgcolor is not None:
        return dim_color(style.bgcolor, style.color)
    return style.color


@pytest.mark.asyncio
@pytest.mark.parametrize("key", list(SCREENS), ids=list(SCREENS.values()))
async def test_selected_row_highlight_is_even_across_dim_cells(key: str) -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(key)
        await settle(pilot)
        table = app.screen.query(KeyedTable).first()
        assert table.row_count, f"{SCREENS[key]} shows no rows to select"
        dim_seen = False
        for row in range(min(table.row_count, 12)):
            table.move_cursor(row=row, animate=False)
            await pilot.pause()
            strip = table.render_line(row + 1)  # under the header
            segments = [s for s in strip if s.style is not None and s.text]
            dim_seen |= any(isinstance(c, Text) and "dim" in str(c.style) for c in table.get_row_at(row))
            backgrounds = {_background(s) for s in segments}
            assert len(backgrounds) == 1, f"{SCREENS[key]} row {row}: {[(s.text, str(s.style)) for s in segments]}"
        if key in {"2", "5", "7"}:  # rows with a "—" or a 0 count in the seeded world
            assert dim_seen, f"{SCREENS[key]} selected no row with a dim cell"
