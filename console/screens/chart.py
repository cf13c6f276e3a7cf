"""A queue's hour as a chart: completed, dead and wait (p95) per minute, as bars over a time axis,
from the engine's per-minute figures (the maintenance leader's rollup; engine/series.py). Pushed
from the Overview (g) on the selected queue; refreshed like every data screen."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from console.format import clean
from console.messages import SeriesLoaded
from console.screens.base import DataScreen
from console.widgets.chart import full_chart
from console.widgets.fresh import update_changed
from engine.series import QueueSeries


class ChartScreen(DataScreen):
    SCOPE = "chart"

    def __init__(self, queue: str) -> None:
        super().__init__()
        self.queue = queue
        self.series: QueueSeries | None = None

    def crumb(self) -> str:
        return f"chart {clean(self.queue, limit=20)}"

    def compose(self) -> ComposeResult:
        yield from self.compose_top()
        yield Static(Text(f"Queue {clean(self.queue, limit=40)}: the last hour", style="bold"), classes="screen-title")
        with VerticalScroll(id="chart-body"):
            yield Static("", id="chart")
        yield from self.compose_bottom()

    def on_mount(self) -> None:
        self.query_one("#chart-body", VerticalScroll).focus()
        super().on_mount()

    async def fetch(self) -> SeriesLoaded:
        return SeriesLoaded(await self.source.queue_series(self.queue))

    def on_series_loaded(self, message: SeriesLoaded) -> None:
        self.series = message.data
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        if self.series is not None and self.is_mounted:
            update_changed(self.query_one("#chart", Static), full_chart(self.series, self.size.width - 2))
