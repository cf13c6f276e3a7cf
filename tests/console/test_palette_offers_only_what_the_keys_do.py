"""The palette offers a screen's action only where its key acts: the same answer the footer asks
(check_action, with the action's parameters). A running job's row takes c, not x or d; a filter
of running jobs takes C, not X or D; the last page offers no next page."""

from __future__ import annotations

from textual.actions import parse

from console.actions import for_scope
from console.app import JobsConsole
from console.demo.world import seeded_source
from console.format import short_id
from console.screens.confirm import ConfirmScreen
from console.screens.jobs import JobsScreen
from console.widgets.keyed_table import KeyedTable
from engine.types import JobState
from tests.console.conftest import SIZE, drive


async def test_the_palette_offers_a_jobs_action_only_where_its_key_acts() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await drive("2", "t", "t", "t", "t")(pilot)  # parked, suspended, dead, running
        screen = app.screen
        assert isinstance(screen, JobsScreen)
        assert screen.where.state is JobState.RUNNING and screen.rows
        titles = [c.title.replace("\\[", "[") for c in app.get_system_commands(screen)]
        assert "Cancel  [c]" in titles and "Cancel all  [C]" in titles
        for never in ("Retry  [x]", "Discard  [d]", "Retry all  [X]", "Discard all  [D]"):
            assert never not in titles, titles
        for a in for_scope("jobs"):  # the palette lists what the footer offers, and only that
            label = f"{a.title}  [{a.key_display or a.key}]"
            offered = screen.check_action(a.name, parse(a.action)[2]) is not False
            assert (label in titles) == offered, (label, offered)


async def test_a_screens_action_chosen_in_the_palette_asks_as_its_key_does() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await drive("2", "t", "t", "t")(pilot)  # dead jobs
        screen = app.screen
        assert isinstance(screen, JobsScreen)
        selected = screen.rows[screen.query_one("#jobs", KeyedTable).selected_key or ""]
        retry = next(c for c in app.get_system_commands(screen) if c.title.startswith("Retry  "))
        await retry.callback()  # type: ignore[misc]
        await drive()(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert f"Retry dead job {short_id(selected.id)} ({selected.name})" in str(
            app.screen.query_one("#confirm-text").render()
        )
        await drive("n")(pilot)
    assert (await app.source.job(selected.id)).job.state is JobState.DEAD
