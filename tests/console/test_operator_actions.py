"""The operator's actions an on-call night needs besides retry and cancel: discarding dead letters
(one, a group, marked groups, a filter), draining a worker, sorting any table by any column, the
state key, and marking rows so one confirmation acts on all of them. Each goes through the
engine's action (audited, refused read-only); state is checked through the Source."""

from __future__ import annotations

import asyncio

import pytest
from textual.pilot import Pilot

from console.app import JobsConsole
from console.demo.world import APP1, seeded_source
from console.screens.confirm import ConfirmScreen, ResultScreen
from console.screens.dead_letters import DeadLettersScreen
from console.screens.jobs import JobsScreen
from console.screens.progress import ProgressScreen
from console.widgets.keyed_table import KeyedTable
from engine.errors import JobsError
from engine.projections import JobFilter
from engine.types import JobState
from tests.console.conftest import SIZE, SMALL, settle


def console(*, read_only: bool = False) -> JobsConsole:
    return JobsConsole(seeded_source(read_only=read_only), refresh=60)


async def keys(pilot: Pilot, *names: str) -> None:
    for k in names:
        await pilot.press(k)
        await settle(pilot)


def table(app: JobsConsole) -> KeyedTable:
    return app.screen.query_one(KeyedTable)


def modal_text(app: JobsConsole) -> str:
    sel = "#confirm-text" if isinstance(app.screen, ConfirmScreen) else "#result-text"
    return str(app.screen.query_one(sel).render())


async def dead_ids(app: JobsConsole, **where: object) -> list[str]:
    page = await app.source.jobs(JobFilter(state=JobState.DEAD, **where))  # type: ignore[arg-type]
    return [j.id for j in page.items]


# --- discard ------------------------------------------------------------------------------------


async def test_discard_a_dead_job_from_its_detail_deletes_it_audited_and_goes_back() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "2", "t", "t", "t")  # parked, suspended, dead
        assert app.screen.where.state is JobState.DEAD
        await keys(pilot, "enter")
        job_id = app.screen.job_id
        await keys(pilot, "d")
        assert isinstance(app.screen, ConfirmScreen)
        assert "deleted" in modal_text(app) and "history keeps who discarded it" in modal_text(app)
        await pilot.click("#confirm-note")
        await pilot.press(*"INC-7")
        await keys(pilot, "tab", "y")
        assert isinstance(app.screen, JobsScreen)  # the detail of a job that is gone went back
        assert job_id not in app.screen.rows
        with pytest.raises(JobsError) as gone:
            await app.source.job(job_id)
        assert gone.value.code == "X_NOT_FOUND" and "discarded by console:" in gone.value.cause
        assert "INC-7" in gone.value.cause


async def test_discard_of_a_group_previews_the_count_then_deletes_all_of_it() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "3", "down")  # charge_card / X_CARD_DECLINED: 5 jobs
        await keys(pilot, "d")
        body = modal_text(app)
        assert "5 jobs match" in body and "would be discarded" in body and "X_CARD_DECLINED" in body
        assert "Discard 5 jobs" in str(app.screen.query_one("#confirm-yes").label)
        await keys(pilot, "y")
        assert isinstance(app.screen, ResultScreen) and "5 discarded" in modal_text(app)
        await keys(pilot, "enter")
        assert not await dead_ids(app, name="charge_card")
        assert len(await dead_ids(app)) == 8  # the other groups untouched


async def test_discard_is_not_offered_on_a_live_job_and_opens_no_modal() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "2", "t")  # parked
        assert app.screen.check_action("discard", ()) is False  # neither in the footer nor the palette
        await keys(pilot, "d")
        assert not isinstance(app.screen, ConfirmScreen)


@pytest.mark.parametrize("path", [("2", "d"), ("2", "D"), ("3", "d"), ("3", "D"), ("4", "d")])
async def test_read_only_offers_no_discard_and_no_drain(path: tuple[str, ...]) -> None:
    app = console(read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, *path)
        assert not isinstance(app.screen, ConfirmScreen)
    with pytest.raises(JobsError) as refused:
        await app.source.discard((await dead_ids(app))[0])
    assert refused.value.code == "X_READ_ONLY"
    with pytest.raises(JobsError) as refused:
        await app.source.drain_worker(APP1)
    assert refused.value.code == "X_READ_ONLY"


# --- drain --------------------------------------------------------------------------------------


async def test_drain_a_worker_asks_first_then_the_worker_row_says_who_asked() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "4")
        assert table(app).selected_key == APP1
        await keys(pilot, "n")  # declining changes nothing
        await keys(pilot, "d")
        assert isinstance(app.screen, ConfirmScreen)
        assert APP1 in modal_text(app) and "stops claiming" in modal_text(app)
        await keys(pilot, "y")
        view = await app.source.workers()
        (w,) = [w for w in view.workers if w.id == APP1]
        assert w.drain_requested_by == app.source.actor
        assert "asked to drain" in table(app).get_cell(APP1, "status").plain
        assert any(a.ok and "asked to drain" in a.summary for a in app.activity)  # the session's log


async def test_a_drains_confirmation_names_the_queues_no_other_live_worker_would_serve() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "4")
        view = await app.source.workers()
        (w,) = [w for w in view.workers if w.id == APP1]
        others = {q for o in view.workers if o.id != APP1 and not o.stale for q in o.queues}
        alone = sorted(set(w.queues) - others)
        assert alone  # the seeded app worker serves queues no other live worker does
        await keys(pilot, "d")
        said = modal_text(app)
        assert f"No other live worker serves {', '.join(alone)}:" in said
        assert "keep running on the other workers" not in said
        await keys(pilot, "n")


def test_a_queue_another_live_worker_serves_is_not_named_unserved() -> None:
    from datetime import UTC, datetime

    from console.screens.flows import unserved_after_drain
    from engine.projections import WorkerView

    at = datetime(2026, 1, 1, tzinfo=UTC)

    def w(wid: str, queues: tuple[str, ...], stale: bool = False, **kw: object) -> WorkerView:
        return WorkerView(wid, "h", 1, queues, 4, 0, at, at, 0.0, stale, **kw)  # type: ignore[arg-type]

    leaving = w("a", ("emails", "billing", "reports"))
    workers = [
        leaving,
        w("b", ("emails",)),
        w("c", ("billing",), stale=True),
        w("d", ("reports",), drain_requested_by="ann"),
    ]
    assert unserved_after_drain([leaving], workers) == ["billing", "reports"]
    assert unserved_after_drain([workers[1]], workers) == []  # a still serves emails


# --- marks ----------------------------------------------------------------------------------------


async def test_marked_dead_jobs_take_one_confirmation_that_names_the_count() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "2", "t", "t", "t", "space", "space", "space")
        marked = table(app).marked_keys()
        assert len(marked) == 3 and "3 marked" in str(app.screen.query_one("#pager").render())
        assert table(app).get_row(marked[0])[0].plain.startswith("✓")
        await keys(pilot, "x")
        assert app.screen.query_one("#confirm-title").render().plain == "Retry 3 jobs?"
        await keys(pilot, "y")
        assert "3 of 3 jobs: done" in modal_text(app)
        await keys(pilot, "enter")
        for job_id in marked:
            assert (await app.source.job(job_id)).job.state is JobState.READY
        assert table(app).marked_keys() == []


async def test_an_action_on_marked_rows_stopped_with_s_ends_before_the_next_row() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "2", "t", "t", "t", "space", "space", "space")
        marked = table(app).marked_keys()
        retry, held, release = app.source.retry, asyncio.Event(), asyncio.Event()

        async def slow(job_id: str, **kw: object) -> object:  # the first row's retry, held open
            held.set()
            await release.wait()
            return await retry(job_id, **kw)  # type: ignore[arg-type]

        app.source.retry = slow  # type: ignore[method-assign]
        await keys(pilot, "x")
        await pilot.press("y")
        await held.wait()
        assert isinstance(app.screen, ProgressScreen)
        await keys(pilot, "s")  # while the first row's retry is out: it lands, no other starts
        release.set()
        await settle(pilot)
        assert isinstance(app.screen, ResultScreen)
        said = modal_text(app)
        assert said.startswith("Stopped by you: 1 of 3 jobs: done. The rest are as they were.")
        states = [(await app.source.job(k)).job.state for k in marked]
        assert sorted(s.value for s in states) == ["dead", "dead", "ready"]


async def test_marks_of_mixed_states_act_on_the_eligible_and_name_the_rest() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "2")
        rows = app.screen.rows
        live = [k for k in table(app).keys if rows[k].state is JobState.READY][:2]
        done = next(k for k in table(app).keys if rows[k].state is JobState.CANCELLED)
        for key in (*live, done):
            table(app).move_cursor(row=table(app).keys.index(key))
            await keys(pilot, "space")
        await keys(pilot, "c")
        body = modal_text(app)
        assert "Cancel 2 jobs of the 3 marked" in body and "left alone" in body and "cancelled" in body
        await keys(pilot, "y", "enter")
        for key in live:
            assert (await app.source.job(key)).job.state is JobState.CANCELLED


async def test_escape_clears_the_marks_before_it_goes_back() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "1", "enter", "space")
        assert table(app).marked_keys()
        await keys(pilot, "escape")
        assert isinstance(app.screen, JobsScreen) and not table(app).marked_keys()
        await keys(pilot, "escape")
        assert app.screen.SCOPE == "overview"


async def test_marked_dead_letter_groups_share_one_dry_run() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "3", "space", "space")  # send_receipt (1) and charge_card (5)
        await keys(pilot, "x")
        body = modal_text(app)
        assert "6 jobs match the 2 marked groups" in body
        await keys(pilot, "y")
        assert "6 retried" in modal_text(app)
        await keys(pilot, "enter")
        assert isinstance(app.screen, DeadLettersScreen)
        assert not await dead_ids(app, name="charge_card") and not await dead_ids(app, name="send_receipt")


async def test_marked_workers_are_asked_to_drain_behind_one_confirmation() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "4", "space", "space", "d")
        assert app.screen.query_one("#confirm-title").render().plain == "Drain 2 workers?"
        await keys(pilot, "y", "enter")
        view = await app.source.workers()
        assert sum(1 for w in view.workers if w.drain_requested_by) == 2


# --- sorting and the state key ------------------------------------------------------------------


async def test_any_table_sorts_by_each_column_in_turn_and_reverses() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        given = table(app).keys
        await keys(pilot, "S")  # the first column (queue), descending
        assert table(app).keys == sorted(given, reverse=True)
        assert "queue ▼" in str(table(app).ordered_columns[0].label)
        for _ in range(6):  # queue, ready, parked, delayed, running, suspended, dead
            await keys(pilot, "s")
        assert table(app).sort_by == ("dead", False)
        view = await app.source.queues()
        dead = {q.name: q.dead.value for q in view.queues}
        assert [dead[k] for k in table(app).keys] == sorted(dead.values())
        for _ in range(len(table(app).column_keys) - 6):
            await keys(pilot, "s")
        assert table(app).sort_by is None and table(app).keys == given  # back to the engine's order


async def test_the_jobs_page_sorts_by_attempt_and_says_it_sorts_this_page_only() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "2")
        page = [app.screen.rows[k] for k in table(app).keys]
        while table(app).sort_by != ("attempt", False):
            await keys(pilot, "s")
        await keys(pilot, "S")
        attempts = [app.screen.rows[k].attempt for k in table(app).keys]
        assert attempts == sorted((j.attempt for j in page), reverse=True)
        assert set(table(app).keys) == {j.id for j in page}  # the same page, reordered
        assert "this page only" in str(app.screen.query_one("#pager").render())


async def test_sorting_dead_letters_by_count_uses_the_number() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "3")
        while table(app).sort_by != ("count", False):
            await keys(pilot, "s")
        await keys(pilot, "S")
        counts = [app.screen.groups[k].count for k in table(app).keys]
        assert counts == sorted(counts, reverse=True) and counts[0] == 5


async def test_the_state_key_steps_through_the_states_that_want_attention() -> None:
    app = console()
    async with app.run_test(size=SMALL) as pilot:
        await keys(pilot, "2")
        seen = []
        for _ in range(7):
            await keys(pilot, "t")
            seen.append(app.screen.where.state)
            states = {j.state for j in app.screen.rows.values()}
            assert states <= {app.screen.where.state} or app.screen.where.state is None
            assert table(app).cursor_row == 0
        assert seen == [
            JobState.PARKED,
            JobState.SUSPENDED,
            JobState.DEAD,
            JobState.RUNNING,
            JobState.DELAYED,
            JobState.READY,
            None,
        ]


async def test_sort_is_offered_only_where_there_is_a_table() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "question_mark")
        assert app.check_action("sort", ()) is False
        await keys(pilot, "escape")
        assert app.check_action("sort", ()) is True


# --- a refused note ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [("2", "t", "t", "t", "x"), ("5", "p")], ids=["retry a job", "pause a task"])
async def test_a_refused_note_says_the_fix_as_the_console_applies_it_not_a_python_keyword(
    path: tuple[str, ...],
) -> None:
    from textual import events
    from textual.widgets import Input

    from console.source import NOTE_FIX

    app = console()
    async with app.run_test(size=SMALL) as pilot:
        await keys(pilot, *path)
        assert isinstance(app.screen, ConfirmScreen)
        note = app.screen.query_one("#confirm-note", Input)
        note.post_message(events.Paste("INC-7\x00 smtp fixed"))  # a NUL, as a paste can bring one
        await settle(pilot)
        assert "\x00" in note.value
        await keys(pilot, "y")
        assert not isinstance(app.screen, ConfirmScreen)
        (toast,) = [n for n in app._notifications if n.title == "X_INVALID_ARGUMENT"]
        assert "holds a NUL character" in toast.message
        assert toast.message.endswith(f"\nfix: {NOTE_FIX}"), toast.message
        assert "note=" not in toast.message  # the keyword a Python caller types
        assert app.activity[-1].fix == NOTE_FIX and "note field" in NOTE_FIX  # the session's log says it too


async def test_a_refused_backfill_note_says_the_consoles_fix_in_its_result_before_the_pass_changes() -> None:
    from textual import events
    from textual.widgets import Input

    from console.screens.confirm import ResultScreen
    from console.source import NOTE_FIX

    app = console()
    async with app.run_test(size=SMALL) as pilot:
        await keys(pilot, "7", "down", "down", "c")  # the running pass of accounts_plan_tier
        assert isinstance(app.screen, ConfirmScreen)
        note = app.screen.query_one("#confirm-note", Input)
        note.post_message(events.Paste("INC-7\x00 rerun"))
        await settle(pilot)
        await keys(pilot, "y")
        assert isinstance(app.screen, ResultScreen) and app.screen.failed
        shown = str(app.screen.body)
        assert "holds a NUL character" in shown and shown.endswith(f"fix: {NOTE_FIX}"), shown
        assert "note=" not in shown
        await keys(pilot, "escape")
        board = await app.source.backfills()
        (view,) = [v for v in board.rows if (v.name, v.environment) == ("accounts_plan_tier", board.environment)]
        assert view.status == "running"  # refused before the pass was cancelled
