"""Keys typed faster than the console answers them: two in one breath reach the console before the
first one's screen or question is up. Each case here crashed the console or left a modal on screen
that nothing could close; each is built without timing, by doing in one step what the two keys did.
"""

from __future__ import annotations

from textual.command import CommandPalette
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Input

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.screens.confirm import ConfirmScreen
from console.screens.dead_letters import DeadLettersScreen
from console.screens.job_detail import JobDetailScreen
from console.screens.jobs import JobsScreen
from console.screens.progress import ProgressScreen
from tests.console.conftest import SMALL, settle


def console() -> JobsConsole:
    return JobsConsole(seeded_source(), refresh=60)


def stack(app: JobsConsole) -> list[str]:
    return [type(s).__name__ for s in app.screen_stack]


async def test_escape_typed_before_a_confirm_shows_leaves_no_question_behind() -> None:
    """``c`` then Escape on a job: Escape went back before the cancel's question was up. The
    question then stood over the Jobs list, answering no one, and any answer to it crashed the
    console (InvalidStateError). Now it is never asked, and the job stays as it was."""
    app = console()
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("2", "enter")
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, JobDetailScreen) and detail.detail is not None
        job = detail.detail.job
        detail.action_cancel()  # c: the flow starts, its question not yet on screen
        detail.action_back()  # Escape, handled before the flow runs
        await settle(pilot)
        assert stack(app) == ["JobsScreen"]
        await pilot.press("escape", "y", "n", "escape")
        await settle(pilot)
        assert app._exception is None and app.return_code is None
        assert isinstance(app.screen, JobsScreen)
        assert (await app.source.job(job.id)).job.state is job.state


async def test_a_question_goes_with_the_flow_that_asked_it() -> None:
    """The asking screen's flow is cancelled (its screen went) while its question is up: the
    question goes too, rather than staying on screen with no one to answer."""
    app = console()
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("2", "enter", "c")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        for worker in [w for w in app.workers if w.group == "action"]:
            worker.cancel()
        await settle(pilot)
        assert stack(app) == ["JobsScreen", "JobDetailScreen"]
        await pilot.press("escape", "escape")
        await settle(pilot)
        assert app._exception is None
        assert stack(app) == ["JobsScreen"]


async def test_a_bulk_action_ending_under_the_palette_takes_its_progress_away() -> None:
    """A paced bulk retry runs behind its progress modal; the operator opens the palette over it,
    and the retry ends. The progress modal used to wait for the palette to close before going,
    which never came: it stayed on screen for good, its Escape only saying it was stopping."""
    app = console()
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("3", "X")
        await settle(pilot)
        app.screen.query_one("#confirm-pace", Checkbox).value = True
        await pilot.press("y")
        await settle(pilot)
        assert isinstance(app.screen, ProgressScreen)
        await pilot.press("ctrl+p")
        await settle(pilot)
        assert isinstance(app.screen, CommandPalette)
        for _ in range(50):  # the paced batches' waits, on the fake clock, until the retry has ended
            if not isinstance(app.screen, CommandPalette):
                break
            app.source.engine.clock.advance(60)
            await settle(pilot)
        assert stack(app) == ["DeadLettersScreen", "ResultScreen"]
        await pilot.press("escape")
        await settle(pilot)
        assert app._exception is None
        assert stack(app) == ["DeadLettersScreen"]
        assert isinstance(app.screen, DeadLettersScreen)


async def test_a_second_enter_in_the_palette_runs_the_command_once() -> None:
    """Enter pressed twice on a palette entry: the second reached the palette after it had closed,
    and Textual ran the command again (Back, run again, acted on the screen it had just left and
    crashed the console). The refresh interval here steps once, not twice."""
    app = console()
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p", *"faster")
        await settle(pilot)
        await pilot.press("down")
        await settle(pilot)
        palette = app.screen
        assert isinstance(palette, CommandPalette)
        field = palette.query_one(Input)
        for _ in range(2):  # both Enters queued before the palette handles the first
            field.post_message(Input.Submitted(field, field.value))
        await settle(pilot)
        assert app._exception is None
        assert not isinstance(app.screen, ModalScreen)
        assert app.refresh_interval == 30.0  # from 60, one step faster


async def test_a_palette_command_for_a_screen_already_left_does_nothing() -> None:
    """A command chosen in the palette runs once the palette has closed; a key typed behind the
    Enter can have left its screen by then. Back on a screen already gone crashed the console
    (NoMatches): a command for a screen no longer there does nothing."""
    app = console()
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # the queue's jobs, a drill-down Back can leave
        await settle(pilot)
        jobs = app.screen
        assert isinstance(jobs, JobsScreen)
        back = next(c for c in app.get_system_commands(jobs) if c.title.startswith("Back"))
        await pilot.press("escape")
        await settle(pilot)
        assert stack(app) == ["OverviewScreen"]
        await back.callback()  # type: ignore[misc]
        await settle(pilot)
        assert app._exception is None
        assert stack(app) == ["OverviewScreen"]
