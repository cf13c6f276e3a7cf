"""The activity log: every action this operator confirmed, landed or refused, newest first,
reachable by a key and the palette."""

from __future__ import annotations

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
        assert "Queue billing paused" in str(app.screen.query_one("#activity").render())
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, ActivityScreen)
