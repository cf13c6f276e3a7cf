"""What a bulk action on the Dead letters screen reaches is what its confirmation names: `C`
cancels the live jobs failing like the groups shown, never every live job; a marked group a
refresh no longer finds is unmarked and said so; a new filter drops the marks. The filter bar
always reads the filter in force, and the activity names what an action acted on."""

from __future__ import annotations

from dataclasses import replace

from console.screens.confirm import ConfirmScreen
from console.screens.dead_letters import DeadLettersScreen
from console.widgets.filter_bar import FilterBar
from console.widgets.keyed_table import KeyedTable
from engine.projections import JobFilter
from engine.testing import Factory
from engine.types import LIVE_STATES, JobState
from tests.console.conftest import SIZE, settle
from tests.console.test_actions import console, filter_jobs, keys


async def _live(app, where: JobFilter) -> set[str]:  # type: ignore[no-untyped-def]
    page = await app.source.jobs(where)
    return {j.id for j in page.items if j.state in LIVE_STATES}


async def test_cancel_all_on_dead_letters_reaches_the_live_jobs_failing_like_a_group_shown_not_every_live_job() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "3")
        screen = app.screen
        assert isinstance(screen, DeadLettersScreen)
        failing: set[str] = set()
        for g in screen.groups.values():
            failing |= await _live(app, JobFilter(name=g.name, error_code=g.error_code))
        every = await _live(app, JobFilter())
        assert failing and len(every) > len(failing)  # the seeded world has live jobs failing nothing
        await keys(pilot, "C")
        assert isinstance(app.screen, ConfirmScreen)
        said = str(app.screen.query_one("#confirm-text").render())
        assert f"{len(failing)} job" in said and f"the {len(screen.groups)} groups shown (their live jobs)" in said
        await keys(pilot, "y", "enter")
        assert await _live(app, JobFilter()) == every - failing
        assert app.activity[-1].summary.startswith(f"Cancel the {len(screen.groups)} groups shown (their live jobs): ")


async def _mark_first_group(app, pilot) -> tuple[KeyedTable, str]:  # type: ignore[no-untyped-def]
    """On Dead letters, the first group marked: its table and key."""
    await keys(pilot, "3", "space")
    table = app.screen.query_one("#groups", KeyedTable)
    (key,) = table.marked_keys()
    return table, key


async def test_a_marked_group_a_refresh_no_longer_finds_is_unmarked_and_said_so() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        table, key = await _mark_first_group(app, pilot)
        g = app.screen.groups[key]
        await app.source.bulk("discard", JobFilter(name=g.name, error_code=g.error_code, state=JobState.DEAD))
        app.screen.reload()
        await settle(pilot)
        assert key not in app.screen.groups and not table.marked_keys()
        assert any("1 marked row has left the list" in n.message for n in app._notifications)


async def test_a_new_filter_on_dead_letters_drops_the_marks_of_groups_read_under_the_old_one() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        table, key = await _mark_first_group(app, pilot)
        app.screen.post_message(FilterBar.Applied(JobFilter(name=app.screen.groups[key].name)))  # still shown
        await settle(pilot)
        assert key in app.screen.groups and not table.marked_keys()


async def test_escape_from_the_filter_bar_leaves_it_reading_the_filter_in_force_not_the_text_typed() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await filter_jobs(pilot, "queue=emails")
        await keys(pilot, "slash")
        bar = app.screen.query_one(FilterBar)
        bar.value = "queue=billing"
        await keys(pilot, "escape")
        assert bar.value == "queue=emails" and app.screen.where == replace(JobFilter(), queue="emails")


async def test_a_bulk_cancel_changes_the_jobs_its_confirmation_counted_not_one_enqueued_while_it_was_open() -> None:
    from engine.ids import IdFactory
    from engine.testing import make_job

    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await filter_jobs(pilot, "queue=emails")
        await keys(pilot, "C")
        assert isinstance(app.screen, ConfirmScreen)
        counted = await _live(app, JobFilter(queue="emails"))
        assert f"Cancel {len(counted)} job" in str(app.screen.query_one("#confirm-title").render())
        engine = app.source.engine
        engine.clock.advance(1)  # the seeded world's clock stands still unless moved
        arrived = await make_job(engine.driver, IdFactory(engine.clock), engine.clock.now(), queue="emails")
        await keys(pilot, "y", "enter")
        assert await _live(app, JobFilter(queue="emails")) == {arrived.id}
        assert app.activity[-1].summary.startswith(f"Cancel queue=emails: {len(counted)} cancelled, 0 skipped")


async def test_a_short_id_as_the_tables_show_it_finds_its_job_in_the_filter_bar() -> None:
    from console.format import short_id

    app = console()
    async with app.run_test(size=SIZE) as pilot:
        page = await app.source.jobs(JobFilter(queue="emails"))
        wanted = page.items[-1].id
        await keys(pilot, "2", "slash")
        await pilot.press(*short_id(wanted))
        await keys(pilot, "enter")
        assert list(app.screen.rows) == [wanted] and app.screen.where.search == wanted
        await keys(pilot, "slash")
        app.screen.query_one(FilterBar).value = "ffffffffffff"  # no id ends or begins so: searched as typed
        await keys(pilot, "enter")
        assert app.screen.where.search == "ffffffffffff" and not app.screen.rows


async def test_retrying_a_dead_group_without_a_code_counts_and_retries_only_its_own_dead_letters() -> None:
    app = console()
    f = Factory.of(app.source.engine)
    nulls: set[str] = set()
    for code in (None, None, "X_BOOM"):
        row = await f.job(JobState.READY, name="legacy_export")
        assert await f.nack(await f.claim(row.id), "dead", error="boom", error_code=code, stop_reason="terminal")
        if code is None:
            nulls.add(row.id)
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "3")
        screen = app.screen
        assert isinstance(screen, DeadLettersScreen)
        table = screen.query_one("#groups", KeyedTable)
        (key,) = [k for k, g in screen.groups.items() if g.name == "legacy_export" and g.error_code is None]
        table.move_cursor(row=table.get_row_index(key))
        await keys(pilot, "x")
        assert isinstance(app.screen, ConfirmScreen)
        said = str(app.screen.query_one("#confirm-text").render())
        assert said.startswith("2 jobs match state=dead name=legacy_export code=- stop=terminal.")
        await keys(pilot, "y", "enter")
        dead = await app.source.jobs(JobFilter(name="legacy_export", state=JobState.DEAD))
        assert {j.error_code for j in dead.items} == {"X_BOOM"}  # the other code's dead letter stays
        assert {j.id for j in dead.items}.isdisjoint(nulls)
