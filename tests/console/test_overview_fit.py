"""The overview at 80x24 fits without scrolling sideways, and shows the fleet's worker slots once
(in the totals) instead of on every queue row."""

from __future__ import annotations

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.screens.overview import NARROW
from console.widgets.keyed_table import KeyedTable
from console.widgets.state_bar import StateBar
from tests.console.conftest import SIZE, SMALL, settle


async def test_overview_fits_80_columns_and_widens_again() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#queues", KeyedTable)
        assert table.column_keys == [key for _, key in NARROW]
        assert table.virtual_size.width <= table.size.width  # no horizontal scroll
        await pilot.press("down", "down")
        selected = table.selected_key
        await pilot.resize_terminal(*SIZE)
        await settle(pilot)
        assert "spark" in table.column_keys and "paused" in table.column_keys
        assert table.selected_key == selected  # the cursor follows its row across the swap


async def test_fleet_slots_are_shown_once_not_per_queue() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "slots" not in app.screen.query_one("#queues", KeyedTable).column_keys
        view = await app.source.workers()
        live = [w for w in view.workers if not w.stale]
        totals = str(app.screen.query_one("#totals", StateBar).content)
        assert (
            f"fleet: {len(live)} workers, {sum(w.in_use for w in live)}/{sum(w.concurrency for w in live)} slots busy"
            in totals
        )


async def test_the_totals_break_lines_between_counts_and_give_the_notes_a_line_of_their_own() -> None:
    """At 80 columns the terminal's wrap left "1" at one line's end and "stale" on the next: each
    count and each note is whole on one line, at 80 and at 120 columns."""
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        for size in (SMALL, SIZE):
            await pilot.resize_terminal(*size)
            await settle(pilot)
            bar = app.screen.query_one("#totals", StateBar)
            lines = str(bar.content).split("\n")
            assert all(len(line) <= size[0] - 2 for line in lines), lines
            assert bar.size.height == len(lines)  # every line on screen
            fleet = next(line for line in lines if "fleet:" in line)
            assert fleet.startswith("paused: ") or fleet.startswith("fleet: "), lines  # a line of its own
            assert fleet.rstrip().endswith("1 stale"), lines
            counts = [part for line in lines if "fleet:" not in line for part in line.split(" · ")]
            assert all(len(part.split()) == 2 for part in counts), counts  # "dead 44", never "dead" alone
