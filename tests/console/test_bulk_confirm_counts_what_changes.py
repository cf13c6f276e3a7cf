"""A bulk action's confirmation counts the jobs it changes, not every job its filter matches: a
dead job whose key a live duplicate holds is matched but dedupes away, and the question, the
button and the result say so."""

from __future__ import annotations

from textual.widgets import Button

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.screens.confirm import ConfirmScreen, ResultScreen
from engine.projections import JobFilter
from engine.testing import Factory
from engine.types import JobState
from tests.console.conftest import SIZE, drive


async def test_a_bulk_retry_confirm_counts_the_jobs_it_retries_not_those_a_live_duplicate_dedupes() -> None:
    source = seeded_source()
    make = Factory.of(source.engine)
    held = await make.job(JobState.DEAD, queue="dupq", key="invoice-7")
    await make.job(JobState.READY, queue="dupq", key="invoice-7")  # the live duplicate holding its key
    free = await make.job(JobState.DEAD, queue="dupq", key="invoice-8")
    app = JobsConsole(source, refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await drive("2", "slash", *"queue=dupq state=dead", "enter", "X")(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert str(app.screen.query_one("#confirm-title").render()) == "Retry 1 job?"
        assert "Retry 1 job [y]" in str(app.screen.query_one("#confirm-yes", Button).label)
        body = str(app.screen.query_one("#confirm-text").render())
        assert "2 jobs match" in body and "1 would dedupe away" in body and "1 would be retried" in body
        await drive("y")(pilot)
        assert isinstance(app.screen, ResultScreen)
        assert "1 retried, 1 skipped" in str(app.screen.query_one("#result-text").render())
    dead = (await source.jobs(JobFilter(queue="dupq", state=JobState.DEAD))).items
    assert [j.id for j in dead] == [held.id]
    assert (await source.job(free.id)).job.state is JobState.READY
