"""Navigation: a number key goes to that screen's root, the nav bar names the shown screen and
spells the breadcrumb, stacks stay bounded, one Escape is one level, a filter puts the cursor
on the first row, and a filter that matches nothing empties the list."""

from __future__ import annotations

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.screens.dead_letters import DeadLettersScreen
from console.screens.job_detail import JobDetailScreen
from console.screens.jobs import JobsScreen
from console.screens.overview import OverviewScreen
from console.widgets.keyed_table import KeyedTable
from tests.console.conftest import SMALL, settle


def console() -> JobsConsole:
    return JobsConsole(seeded_source(), refresh=60)


async def keys(pilot, *names: str) -> None:  # type: ignore[no-untyped-def]
    for k in names:
        await pilot.press(k)
        await settle(pilot)


def nav(app: JobsConsole) -> str:
    return str(app.screen.query_one("#nav").render())


async def test_a_number_key_goes_to_the_screens_list_not_its_last_drill_down() -> None:
    app = console()
    async with app.run_test(size=SMALL) as pilot:
        await keys(pilot, "2", "enter")
        assert isinstance(app.screen, JobDetailScreen)
        await keys(pilot, "1", "2")
        assert isinstance(app.screen, JobsScreen) and len(app.screen_stack) == 1
        await keys(pilot, "3", "enter", "enter", "3")
        assert isinstance(app.screen, DeadLettersScreen) and len(app.screen_stack) == 1


async def test_the_nav_bar_names_the_shown_screen_and_its_breadcrumb() -> None:
    app = console()
    async with app.run_test(size=SMALL) as pilot:
        await keys(pilot, "down", "enter")  # billing's jobs, drilled from the Overview
        assert isinstance(app.screen, JobsScreen)
        assert "2 Jobs ◂" in nav(app) and "Overview ◂" not in nav(app)
        assert "Overview › Jobs › billing" in nav(app)
        await keys(pilot, "enter")
        job = app.screen
        assert isinstance(job, JobDetailScreen)
        assert f"Overview › Jobs › billing › job {job.job_id[-12:]}" in nav(app)
        await keys(pilot, "escape")
        assert isinstance(app.screen, JobsScreen)
        await keys(pilot, "escape")
        assert isinstance(app.screen, OverviewScreen) and "1 Overview ◂" in nav(app)


async def test_a_burst_of_keys_never_grows_the_stack_beyond_one_screen_per_kind() -> None:
    app = console()
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        for _ in range(6):
            await pilot.press("enter", "y", "escape", "down", "enter", "y")
        await settle(pilot)
        kinds = [type(s) for s in app.screen_stack]
        assert len(kinds) == len(set(kinds)), kinds
        for _ in range(len(kinds) - 1):
            await keys(pilot, "escape")
        assert len(app.screen_stack) == 1


async def test_after_a_filter_the_cursor_is_on_the_first_row() -> None:
    app = console()
    async with app.run_test(size=SMALL) as pilot:
        await keys(pilot, "2", "down", "down", "down")
        table = app.screen.query_one(KeyedTable)
        assert table.cursor_row == 3
        await keys(pilot, "slash")
        await pilot.press(*"queue=emails")
        await keys(pilot, "enter")
        assert table.cursor_row == 0 and app.screen.rows[table.selected_key].queue == "emails"


async def test_a_filter_that_matches_nothing_empties_the_list_and_says_so() -> None:
    app = console()
    async with app.run_test(size=SMALL) as pilot:
        await keys(pilot, "2")
        table = app.screen.query_one(KeyedTable)
        assert table.row_count > 0
        await keys(pilot, "slash")
        await pilot.press(*"no-job-has-this-key")
        await keys(pilot, "enter")
        assert app.screen.page is not None and app.screen.page.items == ()
        assert table.row_count == 0  # not the rows of the filter before
        empty = app.screen.query_one("#empty")
        assert empty.display and "No job matches this filter." in str(empty.render())


async def test_i_copies_the_full_job_id_from_the_list_and_the_detail() -> None:
    app = console()
    async with app.run_test(size=SMALL) as pilot:
        await keys(pilot, "2")
        full = app.screen.query_one(KeyedTable).selected_key
        await keys(pilot, "i")
        assert app.clipboard == full and len(full) == 36
        await keys(pilot, "down", "enter", "i")
        assert app.clipboard == app.screen.job_id != full


async def test_at_80_columns_the_nav_bar_always_names_the_shown_screen() -> None:
    app = console()
    async with app.run_test(size=(80, 24)) as pilot:
        await keys(pilot, "7")
        bar = nav(app)
        assert "7 Backfills ◂" in bar and len(bar.rstrip()) <= 80
        assert all(f" {k} " in bar for k in "123456")  # the others by their keys
    app = console()
    async with app.run_test(size=(120, 36)) as pilot:
        await keys(pilot, "7")
        assert "3 Dead letters" in nav(app) and "7 Backfills ◂" in nav(app)  # wide enough for every title


async def test_w_opens_the_job_a_fan_in_waits_on_and_o_opens_the_fan_in_back() -> None:
    app = console()
    async with app.run_test(size=SMALL) as pilot:
        await keys(pilot, "2", "slash", *"name=close_month", "enter", "enter")
        fan_in = app.screen
        assert isinstance(fan_in, JobDetailScreen) and fan_in.detail is not None
        live = [a for a in fan_in.detail.awaited if a.state.value in ("running", "ready")]
        assert fan_in.check_action("open_waited", ()) and not fan_in.check_action("open_fan_in", ())
        await keys(pilot, "w")
        held = app.screen
        assert isinstance(held, JobDetailScreen) and held.job_id == live[0].id  # the first still live
        assert held.detail is not None and "waits for this job in step 'statements'" in held.detail.why.summary
        assert held.check_action("open_fan_in", ()) and not held.check_action("open_waited", ())
        await keys(pilot, "o")
        assert isinstance(app.screen, JobDetailScreen) and app.screen.job_id == fan_in.job_id
        assert len(app.screen_stack) == 2  # one detail at a time: each replaced the last


async def test_a_job_a_fan_out_enqueued_names_its_parent_and_o_opens_it_once_nothing_waits() -> None:
    app = console()
    async with app.run_test(size=SMALL) as pilot:
        await keys(pilot, "2", "slash", *"name=render_statement state=completed", "enter", "enter")
        child = app.screen
        assert isinstance(child, JobDetailScreen) and child.detail is not None
        (parent, step), *_ = child.detail.parents
        assert parent.name == "close_month" and step == "fan-out"
        assert not any(c.kind == "awaited" for c in child.detail.why.causes)  # settled: no fan-in waits on it
        facts = str(child.query_one("#facts").render())
        assert f"parent  {parent.id[-12:]}  close_month" in facts and "· step 'fan-out'" in facts
        await keys(pilot, "o")
        assert isinstance(app.screen, JobDetailScreen) and app.screen.job_id == parent.id


async def test_at_80_columns_the_nav_bar_names_every_screen_not_only_the_shown_one() -> None:
    """A first look at 80x24 showed "1 Overview ◂  2  3  4  5  6  7": six screens by a number
    alone. Each is named (Dead letters as Dead), on every screen, within 80 columns."""
    titles = ("1 Overview", "2 Jobs", "3 Dead", "4 Workers", "5 Schedules", "6 Outbox", "7 Backfills")
    app = console()
    async with app.run_test(size=(80, 24)) as pilot:
        for key in "1234567":
            await keys(pilot, key)
            bar = nav(app)
            assert len(bar.rstrip()) <= 80 and all(t in bar for t in titles), bar
