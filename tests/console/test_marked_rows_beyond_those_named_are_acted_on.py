"""An action on marked rows acts on every marked row its confirmation counted, the ones it names
and the ones it counts as "… and N more" alike, and the activity log has it."""

from __future__ import annotations

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.screens.confirm import ConfirmScreen, ResultScreen
from console.screens.flows_bulk import SHOWN
from console.widgets.keyed_table import KeyedTable
from engine.types import JobState
from tests.console.conftest import SIZE, drive


async def test_a_retry_of_more_marked_jobs_than_the_confirm_names_retries_every_one() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    n = SHOWN + 1
    async with app.run_test(size=SIZE) as pilot:
        await drive("2", "t", "t", "t", *["space"] * n)(pilot)  # dead jobs, n of them marked
        marked = app.screen.query_one(KeyedTable).marked_keys()
        assert len(marked) == n
        await drive("x")(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert str(app.screen.query_one("#confirm-title").render()) == f"Retry {n} jobs?"
        assert "… and 1 more" in str(app.screen.query_one("#confirm-text").render())
        await drive("y")(pilot)
        assert isinstance(app.screen, ResultScreen)
        assert f"{n} of {n} jobs: done." in str(app.screen.query_one("#result-text").render())
        assert app.activity[-1].ok and app.activity[-1].summary.startswith(f"Retry {n} jobs: {n} of {n} jobs: done.")
    for job_id in marked:
        assert (await app.source.job(job_id)).job.state is JobState.READY
