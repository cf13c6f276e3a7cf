"""A confirmation acts only when the operator confirms: y, or a click on its confirm button. Enter
on the button it opens focused on (Leave it), a click on Leave it and a click outside its box
leave everything as it was. Each case is checked on the engine's state, not the screen alone."""

from __future__ import annotations

from textual.pilot import Pilot

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.screens.confirm import ConfirmScreen
from tests.console.conftest import SIZE, settle


async def keys(pilot: Pilot, *names: str) -> None:
    for k in names:
        await pilot.press(k)
        await settle(pilot)


async def emails_paused(app: JobsConsole) -> bool:
    view = await app.source.queues()
    return next(q for q in view.queues if q.name == "emails").paused


async def ask_to_pause_emails(pilot: Pilot) -> None:
    await keys(pilot, "down", "down", "p")
    assert isinstance(pilot.app.screen, ConfirmScreen)
    assert "Pause queue emails" in str(pilot.app.screen.query_one("#confirm-text").render())


async def test_enter_on_a_confirm_just_opened_presses_leave_it_and_changes_nothing() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await ask_to_pause_emails(pilot)
        assert app.screen.focused is not None and app.screen.focused.id == "confirm-no"
        await keys(pilot, "enter")
        assert not isinstance(app.screen, ConfirmScreen)
        assert not await emails_paused(app)


async def test_a_click_on_leave_it_changes_nothing() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await ask_to_pause_emails(pilot)
        await pilot.click("#confirm-no")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert not await emails_paused(app)


async def test_a_click_outside_the_confirm_box_changes_nothing() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await ask_to_pause_emails(pilot)
        await pilot.click(offset=(0, 0))  # the dimmed screen around the box
        await settle(pilot)
        assert not await emails_paused(app)
        if isinstance(app.screen, ConfirmScreen):  # still asking: n answers it
            await keys(pilot, "n")
        assert not await emails_paused(app)


async def test_a_click_on_the_confirm_button_pauses_the_queue() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await ask_to_pause_emails(pilot)
        await pilot.click("#confirm-yes")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        assert await emails_paused(app)
