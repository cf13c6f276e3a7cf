"""Console test harness: seeded sources, a driver that can lose its database, and `settle`.

Snapshots must be sync tests (snap_compare runs the app on its own loop); everything is done
in ``run_before`` (which runs before snap_compare's own presses), with `settle` between keys so
every data worker has finished before the screen is captured.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import ModalScreen
from textual.widgets import Input
from textual.worker import WorkerCancelled, WorkerFailed

from console import palette
from console.app import JobsConsole
from console.demo.world import seeded_engine, seeded_source
from console.source import Source

SIZE = (120, 36)
SMALL = (80, 24)


async def settle(pilot: Pilot) -> None:
    """Let every worker (data loads, action flows) finish and the screen repaint."""
    app = pilot.app
    for _ in range(4):
        await pilot.pause()
        # An action flow waits on its modal: waiting for it would wait for the operator.
        modal = isinstance(app.screen, ModalScreen)
        for worker in [w for w in app.workers if not (modal and w.group == "action")]:
            try:
                await worker.wait()
            except (WorkerCancelled, WorkerFailed):  # a superseded refresh; a failure the screen shows
                pass
    for node in app.screen.query(Input):
        node.cursor_blink = False
    await pilot.pause()


def drive(*keys: str, then: Callable[[Pilot], Awaitable[None] | None] | None = None):  # type: ignore[no-untyped-def]
    """A run_before that presses ``keys`` one by one, settling after each."""

    async def run(pilot: Pilot) -> None:
        await settle(pilot)
        for k in keys:
            await pilot.press(k)
            await settle(pilot)
        if then is not None:
            result = then(pilot)
            if inspect.isawaitable(result):
                await result
            await settle(pilot)

    return run


def modal(*keys: str):  # type: ignore[no-untyped-def]
    """``drive(*keys)``, then hold that a modal is on top: a key path that lands on a toast instead
    (a row that cannot take the action) fails here rather than pinning the wrong picture."""

    def on_a_modal(pilot: Pilot) -> None:
        assert isinstance(pilot.app.screen, ModalScreen), f"{keys} did not open a modal: {pilot.app.screen}"

    return drive(*keys, then=on_a_modal)


class Outage:
    """Wraps a driver: while ``down`` every call raises the error a lost connection raises."""

    def __init__(self, driver: Any) -> None:
        self._driver = driver
        self.down = False
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._driver, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.down:
                raise ConnectionRefusedError(
                    "connection to server at db.internal:5432 refused (is the server running?)"
                )
            return await attr(*args, **kwargs)

        return call


def outage_source(*, read_only: bool = False) -> tuple[Source, Outage]:
    engine = seeded_engine()
    outage = Outage(engine.driver)
    engine.driver = outage  # type: ignore[assignment]
    return Source(
        engine, read_only=read_only, actor="console:test", database="db.internal/app", driver="postgres"
    ), outage


@pytest.fixture(autouse=True)
def _colour_palette() -> Iterator[None]:
    """An app built under NO_COLOR switches the process's palette to attributes; the next test
    starts in colour whatever it builds."""
    yield
    palette.use(no_color=False)


@pytest.fixture
def app() -> JobsConsole:
    return JobsConsole(seeded_source(), refresh=60)


@pytest.fixture
def ro_app() -> JobsConsole:
    return JobsConsole(seeded_source(read_only=True), refresh=60)


@pytest.fixture
def empty_app() -> JobsConsole:
    return JobsConsole(seeded_source(empty=True), refresh=60)
