"""The database lost while an action is landing (after its confirmation): the console goes on,
says the action may not all have landed, and the activity log has it as failed. A bulk action
and an action on marked rows each, besides the one-job action test_safety covers."""

from __future__ import annotations

from console.app import JobsConsole
from console.screens.confirm import ConfirmScreen, ResultScreen
from tests.console.conftest import SIZE, drive, outage_source


def result_text(app: JobsConsole) -> str:
    assert isinstance(app.screen, ResultScreen), app.screen
    return str(app.screen.query_one("#result-text").render())


async def test_a_bulk_retry_that_loses_the_database_says_some_jobs_may_have_changed() -> None:
    source, outage = outage_source()
    app = JobsConsole(source, refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await drive("3", "X")(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        outage.down = True
        await drive("y")(pilot)
        said = result_text(app)
        assert "ConnectionRefusedError" in said and "Some jobs may have changed" in said, said
        assert "failed part-way" in str(app.screen.query_one("#result-title").render())
        assert any(not a.ok and "ConnectionRefusedError: " in a.summary for a in app.activity), app.activity
        await drive("enter")(pilot)
        assert app.is_running and app._exception is None


async def test_marked_rows_that_lose_the_database_say_which_failed_and_try_no_more() -> None:
    source, outage = outage_source()
    app = JobsConsole(source, refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await drive("2", "t", "t", "t", "space", "space", "space", "x")(pilot)  # three dead jobs
        assert isinstance(app.screen, ConfirmScreen)
        outage.down = True
        before = outage.calls
        await drive("y")(pilot)
        said = result_text(app)
        assert said.startswith("0 of 3 jobs: done. 1 refused or failed:"), said
        assert "ConnectionRefusedError" in said
        assert outage.calls - before >= 1
        assert any(not a.ok and a.summary.startswith("Retry 3 jobs: 0 of 3") for a in app.activity), app.activity
        await drive("enter")(pilot)
        assert app.is_running and app._exception is None
