"""Every modal fits 80x24: the body scrolls, the count, the options and the buttons stay on
screen; focus never lands off-screen; Enter in the note field never confirms."""

from __future__ import annotations

from textual.widget import Widget
from textual.widgets import Button, Input

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.screens.confirm import ConfirmScreen
from tests.console.conftest import SMALL, settle


def _on_screen(app: JobsConsole, w: Widget) -> bool:
    region = w.region
    screen = app.screen.region
    return region.height > 0 and screen.contains_region(region) and w.visible


async def test_bulk_confirm_at_80x24_keeps_buttons_pace_and_note_on_screen() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("3", "X")
        await settle(pilot)
        modal = app.screen
        assert isinstance(modal, ConfirmScreen)
        for sel in ("#confirm-title", "#confirm-pace", "#confirm-note", "#confirm-yes", "#confirm-no"):
            assert _on_screen(app, modal.query_one(sel)), sel
        yes = str(modal.query_one("#confirm-yes", Button).label)
        assert yes.startswith("Retry ") and yes.split()[2].startswith("job"), yes  # "Retry 28 jobs [y]"
        for _ in range(8):  # Tab around the whole dialog: focus is always somewhere visible
            await pilot.press("tab")
            await pilot.pause()
            assert app.focused is not None and _on_screen(app, app.focused), app.focused


async def test_enter_in_the_note_field_never_confirms_a_bulk_action() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("3", "X")
        await settle(pilot)
        modal = app.screen
        modal.query_one("#confirm-note", Input).focus()
        await pilot.press("n", "o", "enter")
        await settle(pilot)
        assert app.screen is modal  # still asking
        assert modal.query_one("#confirm-note", Input).value == "no"
        assert app.focused is modal.query_one("#confirm-no", Button)
        await pilot.press("enter")  # Enter on "Leave it" leaves it
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)


async def test_a_cancel_confirms_two_answers_never_share_the_word_cancel() -> None:
    """Cancelling a job: the yes names the cancel, the no must not read as one ("Cancel job ...
    [y]" beside "Cancel [n]" named both answers the same)."""
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        for keys in (("2", "slash", *"state=delayed", "enter", "c"), ("enter", "c")):
            for key in keys:  # the delayed list's first job, then the same job's detail
                await pilot.press(key)
                await settle(pilot)
            modal = app.screen
            assert isinstance(modal, ConfirmScreen)
            yes = str(modal.query_one("#confirm-yes", Button).label)
            no = str(modal.query_one("#confirm-no", Button).label)
            assert yes.startswith("Cancel ") and no == "Leave it [n]", (yes, no)
            await pilot.press("n")
            await settle(pilot)
            assert not isinstance(app.screen, ConfirmScreen)
