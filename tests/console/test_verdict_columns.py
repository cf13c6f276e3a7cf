"""At 80x24, the on-call terminal, the Workers and Schedules screens show each row's verdict (a
worker's status and last heartbeat, a task's status and next run) without scrolling sideways:
those columns come right after the row's name, the long ones (queues, cron, zone) after them."""

from __future__ import annotations

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.widgets.keyed_table import KeyedTable
from tests.console.conftest import SMALL, settle
from tests.console.test_schedules_screen import scheduled_source


def shown(table: KeyedTable, *keys: str) -> bool:
    """Each column of ``keys`` ends within the table's width, unscrolled."""
    end, ends = 0, {}
    for column in table.ordered_columns:
        end += column.get_render_width(table)
        ends[column.key.value] = end
    assert set(keys) <= set(ends), f"no column {set(keys) - set(ends)}"
    return table.scroll_x == 0 and max(ends[k] for k in keys) <= table.scrollable_content_region.width


async def opened(pilot, key: str, table: str) -> KeyedTable:  # type: ignore[no-untyped-def]
    """The table of the screen ``key`` opens, once it has loaded."""
    await pilot.press(key)
    await settle(pilot)
    return pilot.app.screen.query_one(f"#{table}", KeyedTable)  # type: ignore[no-any-return]


async def test_a_stale_workers_status_and_heartbeat_show_within_80_columns() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        table = await opened(pilot, "4", "workers")
        stale = [w for w in (await app.source.workers()).workers if w.stale]
        assert stale, "the seeded world has a stale worker"
        assert shown(table, "status", "heartbeat")
        assert table.get_cell(stale[0].id, "status").plain == "STALE"
        assert table.get_cell(stale[0].id, "heartbeat").plain.endswith(" ago")


async def test_a_paused_tasks_status_and_next_run_show_within_80_columns() -> None:
    app = JobsConsole(scheduled_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        table = await opened(pilot, "5", "schedules")
        assert shown(table, "status", "next")
        assert table.get_cell("tmp.cleanup", "status").plain == "PAUSED alice"


async def test_every_workers_column_shows_within_80_columns_and_the_host_and_pid_under_the_table() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        table = await opened(pilot, "4", "workers")
        assert shown(table, *table.column_keys)  # started, the last, included
        w = next(w for w in (await app.source.workers()).workers if w.id == table.selected_key)
        said = str(app.screen.query_one("#worker").render())
        assert said.startswith(f"{w.id}  {w.host} pid {w.pid}, started ")
        assert f"queues {', '.join(w.queues)}" in said  # whole, where the table cuts them
        await pilot.press("down")
        await settle(pilot)
        assert str(app.screen.query_one("#worker").render()).startswith(f"{table.selected_key}  ")
