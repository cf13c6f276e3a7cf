"""The activity log: every action this operator confirmed, landed or refused, newest first,
reachable by a key and the palette."""

from __future__ import annotations

import io

from rich.console import Console
from textual.widgets import Static

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.screens.activity import ActivityScreen
from tests.console.conftest import SMALL, settle


async def test_a_confirmed_action_is_in_the_activity_log_reached_by_a() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        for k in ("down", "p", "y"):  # pause billing
            await pilot.press(k)
            await settle(pilot)
        assert app.activity and app.activity[-1].ok and "billing" in app.activity[-1].summary
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ActivityScreen)
        out = Console(width=80, record=True, file=io.StringIO())
        out.print(app.screen.query_one("#activity", Static).content)
        line = next(ln for ln in out.export_text().splitlines() if "Queue billing paused" in ln)
        assert line.split()[1] == "ok"  # time, outcome, then what landed: one row of the grid
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, ActivityScreen)
        for k in ("a", "a"):  # its own key closes it too
            await pilot.press(k)
            await settle(pilot)
        assert not isinstance(app.screen, ActivityScreen)


async def test_textuals_own_log_call_reaches_textuals_log_not_the_activity_list() -> None:
    # The console kept its activity in a method named `_log`, shadowing App._log, which Textual
    # calls with (group, verbosity, caller, *objects) for every `self.log(...)` under `textual
    # run --dev`: a TypeError there, or a junk line in the Activity screen.
    import inspect

    from textual._log import LogGroup, LogVerbosity

    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        before = list(app.activity)
        frame = inspect.getframeinfo(inspect.currentframe())  # type: ignore[arg-type]
        app._log(LogGroup.INFO, LogVerbosity.NORMAL, frame, "a devtools line")
        assert app.activity == before


async def test_a_flow_that_raises_is_said_in_a_toast_and_the_activity_log_not_swallowed(monkeypatch) -> None:
    # Every action flow runs in a worker that must not end the app on an error; an error nothing
    # caught used to end the worker silently: the key did nothing the operator could see.
    import console.screens.flows_bulk as flows_bulk

    def broken(plans: object, scope: object = None) -> None:
        raise RuntimeError("the dry run's text could not be built")

    monkeypatch.setattr(flows_bulk, "plan_text", broken)
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        for k in ("3", "X"):
            await pilot.press(k)
            await settle(pilot)
        said = [n for n in app._notifications if n.severity == "error"]
        assert [n.message for n in said] == ["RuntimeError: the dry run's text could not be built"]
        assert not app.activity[-1].ok
        assert (
            app.activity[-1].summary
            == "The console failed at that: RuntimeError: the dry run's text could not be built"
        )
        assert app.is_running  # the console goes on
