"""A queue's figures over time at 80 columns: the Overview's compact chart of the selected queue
(completed, dead, wait p95 per minute, with the hour's totals), and the chart screen (g) with the
same figures as bars over a time axis; the bars themselves, in eighth blocks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from textual.pilot import Pilot

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.screens.chart import ChartScreen
from console.widgets.chart import bar_rows, compact_chart, fold, full_chart, spark_line
from console.widgets.keyed_table import KeyedTable
from engine.series import MinuteFigures, QueueSeries
from tests.console.conftest import SMALL, settle

T0 = datetime(2026, 1, 1, 11, 1, tzinfo=UTC)


def series(done: list[int], dead: list[int] | None = None, wait: list[float | None] | None = None) -> QueueSeries:
    dead = dead or [0] * len(done)
    wait = wait or [None] * len(done)
    minutes = tuple(
        MinuteFigures(T0 + timedelta(minutes=i), c, d, w, w, w) for i, (c, d, w) in enumerate(zip(done, dead, wait))
    )
    return QueueSeries("billing", T0 + timedelta(minutes=len(done)), minutes)


async def keys(pilot: Pilot, *names: str) -> None:
    for k in names:
        await pilot.press(k)
        await settle(pilot)


def test_bars_are_eighth_blocks_scaled_to_the_top_and_any_work_shows() -> None:
    assert spark_line([0, 1, 8, None]) == " ▁█ "
    assert bar_rows([4, 1, 0, 0.01], 2, top=4) == ["█   ", "█▄ ▁"]
    assert fold([1, 2, 3, 4], 2) == [3, 7] and fold([1, None, 5, 2], 2, max) == [1, 5]


def test_the_compact_chart_fits_80_columns_and_says_the_hour_s_totals() -> None:
    s = series([i % 7 for i in range(60)], dead=[1 if i % 20 == 0 else 0 for i in range(60)], wait=[2.5] * 60)
    text = compact_chart(s, 78)
    lines = text.plain.splitlines()
    assert len(lines) == 4 and all(len(line) <= 78 for line in lines)
    assert lines[1].startswith("done") and lines[1].endswith(f"{s.completed:,}/h")
    assert lines[2].endswith("3/h") and lines[3].endswith("p95 ≤ 2.5s")


def test_the_full_chart_puts_the_hour_on_a_time_axis() -> None:
    s = series([0] * 59 + [12], dead=[0] * 59 + [2], wait=[None] * 59 + [1.5])
    lines = full_chart(s, 78).plain.splitlines()
    assert lines[0] == "completed per minute · 12 in the hour"
    assert lines[1].strip().startswith("12") and lines[1].endswith("█")  # the last minute's bar, full
    assert lines[-1].strip().startswith("-60m") and lines[-1].endswith("now")
    assert all(len(line) <= 78 for line in lines)


async def test_the_overview_at_80x24_charts_the_selected_queue_and_follows_the_cursor() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        table = app.screen.query_one(KeyedTable)
        for queue in ("billing", "emails"):
            table.move_cursor(row=table.keys.index(queue))
            await settle(pilot)
            want = await app.source.queue_series(queue)
            shown = str(app.screen.query_one("#series").render())
            assert shown.startswith(queue) and f"{want.completed:,}/h" in shown and f"{want.dead:,}/h" in shown
            assert app.screen.query_one("#series").region.bottom <= 23  # on screen, above the footer
        assert want.completed > 0


async def test_g_opens_the_queue_chart_and_escape_goes_back() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await keys(pilot, "down", "g")
        assert isinstance(app.screen, ChartScreen) and app.screen.queue == "billing"
        body = str(app.screen.query_one("#chart").render())
        want = await app.source.queue_series("billing")
        assert f"completed per minute · {want.completed:,} in the hour" in body and "dead per minute" in body
        assert "wait p95" in body and "now" in body
        await keys(pilot, "escape")
        assert app.screen.SCOPE == "overview"
