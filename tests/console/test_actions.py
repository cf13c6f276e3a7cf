"""Every console action through the keyboard: the key, the confirmation, the engine call, the
refreshed view. The engine is the seeded memory driver; its state is checked through the Source,
never through the screen alone."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Static

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.failures import NoAnswer
from console.messages import Navigate
from console.screens.confirm import ConfirmScreen, ResultScreen
from console.screens.dead_letters import DeadLettersScreen
from console.screens.help import HelpScreen
from console.screens.job_detail import JobDetailScreen
from console.screens.jobs import JobsScreen
from console.screens.progress import ProgressScreen
from console.screens.steps import StepChooser
from console.screens.why import WhyScreen
from console.widgets.keyed_table import KeyedTable
from engine.errors import JobsError
from engine.projections import JobFilter
from engine.types import JobState
from tests.console.conftest import SIZE, settle


def console() -> JobsConsole:
    return JobsConsole(seeded_source(), refresh=60)


async def keys(pilot: Pilot, *names: str) -> None:
    for k in names:
        await pilot.press(k)
        await settle(pilot)


async def filter_jobs(pilot: Pilot, text: str) -> None:
    await keys(pilot, "2", "slash")
    await pilot.press(*text)
    await keys(pilot, "enter")


async def ids(app: JobsConsole, **where: object) -> list[str]:
    page = await app.source.jobs(JobFilter(**where))  # type: ignore[arg-type]
    return [j.id for j in page.items]


async def state_of(app: JobsConsole, job_id: str) -> JobState:
    return (await app.source.job(job_id)).job.state


def table(app: JobsConsole) -> KeyedTable:
    return app.screen.query_one(KeyedTable)


# --- navigation ---------------------------------------------------------------------------------


async def test_number_keys_reach_every_screen() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key, mode in (
            ("2", "jobs"),
            ("3", "dead_letters"),
            ("4", "workers"),
            ("5", "schedules"),
            ("6", "outbox"),
            ("1", "overview"),
        ):
            await keys(pilot, key)
            assert app.current_mode == mode
        assert table(app).keys == ["accounts", "billing", "emails", "integrations", "reports", "webhooks"]


async def test_a_navigation_under_an_open_palette_or_confirm_never_pops_it() -> None:
    """Fuzzing the console at 80x24 crashed it (ScreenStackError): a number key that reached the app
    while the palette was still opening went to that screen's root and popped the palette from under
    the Enter already on its way to it. A navigation never pops a modal the user is in."""
    from textual.command import CommandPalette

    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "3")
        await keys(pilot, "ctrl+p")
        palette = app.screen
        assert isinstance(palette, CommandPalette)
        app.action_goto("dead_letters")  # the digit, as the app received it
        app.post_message(Navigate("help", {}))
        await settle(pilot)
        assert app.screen is palette
        await keys(pilot, "escape")
        await keys(pilot, "x")  # retry the selected group: its confirm
        confirm = app.screen
        assert isinstance(confirm, ConfirmScreen)
        app.action_goto("jobs")
        await settle(pilot)
        assert app.screen is confirm and app.current_mode == "dead_letters"
        await keys(pilot, "n")
        assert isinstance(app.screen, DeadLettersScreen)
        await keys(pilot, "question_mark", "ctrl+p")  # the palette over a pushed screen
        help_screen, palette = app.screen_stack[-2:]
        assert isinstance(help_screen, HelpScreen) and isinstance(palette, CommandPalette)
        help_screen.action_back()  # an Escape that reached the screen under the opening palette
        app.action_help()  # a ? that reached the app as the palette opened over the help
        await settle(pilot)
        assert app.screen is palette


async def test_a_second_answer_to_a_closed_modal_pops_nothing() -> None:
    """Textual's dismiss pops whatever is on top: an Enter queued behind the Escape that closed the
    palette popped the screen under it, or crashed the console (ScreenStackError) at a root."""
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "3", "ctrl+p")
        palette = app.screen
        await keys(pilot, "escape")
        assert isinstance(app.screen, DeadLettersScreen)
        palette.dismiss()  # the queued second answer
        await settle(pilot)
        assert isinstance(app.screen, DeadLettersScreen) and len(app.screen_stack) == 1
        await keys(pilot, "enter")  # the group's jobs
        jobs = app.screen
        await keys(pilot, "x")
        confirm = app.screen
        assert isinstance(confirm, ConfirmScreen)
        await keys(pilot, "n")
        confirm.dismiss(None)  # an n typed twice
        await settle(pilot)
        assert app.screen is jobs


async def test_a_page_move_in_the_palette_while_its_list_is_rebuilt_moves_nothing() -> None:
    """Fuzzing crashed the console with Textual's KeyError from the option list's page move, its
    highlighted option not yet laid out as the search refilled it."""
    from textual.command import CommandList

    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "ctrl+p")
        await pilot.press("d", "e", "a")
        await settle(pilot)
        palette = app.screen
        commands = palette.query_one(CommandList)
        commands.highlighted = 0
        commands._index_to_line.clear()  # the instant between the refill and its layout
        palette._action_command_list("page_down")  # type: ignore[attr-defined]
        await settle(pilot)
        assert app.screen is palette


async def test_search_results_that_land_once_the_palette_closed_show_nothing() -> None:
    """Fuzzing crashed the console with NoMatches: the palette's search answered after Escape had
    closed it, and its watcher looked for the list that was gone."""
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "ctrl+p")
        palette = app.screen
        await keys(pilot, "escape")
        assert palette is not app.screen
        palette._watch__list_visible()  # type: ignore[attr-defined]  # as the late results do: no NoMatches
        await settle(pilot)
        assert len(app.screen_stack) == 1 and app.screen is not palette


async def test_help_lists_every_key_and_closes() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        out = Console(width=80, record=True, file=io.StringIO())
        out.print(app.screen.query_one("#help-table", Static).content)
        text = out.export_text()
        for needle in (
            "From step",
            "Pause/resume",
            "start a dry run in the selected row's",  # its description wraps under itself at 80 columns
            "staged rows: backlog, age trend",
            "ctrl+p",
        ):
            assert needle in text
        await keys(pilot, "escape")
        assert not isinstance(app.screen, HelpScreen)
        await keys(pilot, "question_mark", "question_mark")  # its own key closes it too
        assert not isinstance(app.screen, HelpScreen)


async def test_refresh_interval_is_adjustable_live() -> None:
    app = JobsConsole(seeded_source(), refresh=2)
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "plus")
        assert app.refresh_interval == 5.0
        await keys(pilot, "minus", "minus")
        assert app.refresh_interval == 1.0
        assert "every 1s" in str(app.screen.query_one("#status").render())


async def test_overview_enter_opens_the_queue_jobs_and_escape_returns() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await keys(pilot, "down", "enter")  # billing
        assert isinstance(app.screen, JobsScreen)
        assert app.screen.where.queue == "billing"
        assert {j.queue for j in app.screen.rows.values()} == {"billing"}
        await keys(pilot, "escape")
        assert app.current_mode == "overview" and not isinstance(app.screen, JobsScreen)


async def test_why_queue_names_the_pause() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "end", "y")  # webhooks, paused by alice
        assert isinstance(app.screen, WhyScreen)
        text = str(app.screen.query_one("#causes").render())
        assert "paused by alice" in text and "INC-2041" in text


async def test_queue_selected_at_start_with_focus_queue() -> None:
    app = JobsConsole(seeded_source(), refresh=60, queue="reports")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert table(app).selected_key == "reports"
        await keys(pilot, "2")
        assert app.screen.where.queue == "reports"


# --- pause / resume -----------------------------------------------------------------------------


async def test_pause_asks_then_pauses_with_the_note() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "down", "down", "p")  # emails
        assert isinstance(app.screen, ConfirmScreen)
        assert "Pause queue emails" in str(app.screen.query_one("#confirm-text").render())
        await pilot.click("#confirm-note")
        await pilot.press(*"INC-1")
        await keys(pilot, "enter", "y")  # Enter leaves the note; y confirms
        view = await app.source.queues()
        emails = next(q for q in view.queues if q.name == "emails")
        assert emails.paused and emails.pause_note == "INC-1" and emails.paused_by == "console:test"
        assert "PAUSED" in str(table(app).get_row("emails")[-1])


async def test_declining_a_confirmation_changes_nothing() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "down", "down", "p", "n")
        assert not isinstance(app.screen, ConfirmScreen)
        view = await app.source.queues()
        assert not next(q for q in view.queues if q.name == "emails").paused
        await keys(pilot, "p", "escape")
        view = await app.source.queues()
        assert not next(q for q in view.queues if q.name == "emails").paused


async def test_resume_a_paused_queue() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "end", "p")
        assert "Resume queue webhooks" in str(app.screen.query_one("#confirm-text").render())
        await keys(pilot, "y")
        view = await app.source.queues()
        assert not next(q for q in view.queues if q.name == "webhooks").paused


# --- jobs list ----------------------------------------------------------------------------------


async def test_filter_by_state_and_by_input_field() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await filter_jobs(pilot, "state=dead")
        assert {j.state for j in app.screen.rows.values()} == {JobState.DEAD}
        await keys(pilot, "slash", "ctrl+a", "ctrl+k")
        await pilot.press(*"input.invoice_id=41")
        await keys(pilot, "enter")
        (only,) = app.screen.rows.values()
        assert (await app.source.job(only.id)).job.input["invoice_id"] == 41


async def test_a_bad_filter_is_refused_with_the_words_to_type_and_the_list_kept() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await filter_jobs(pilot, "state=sleeping")
        assert app.screen.where == JobFilter()
        (said,) = [n for n in app._notifications if "X_UNKNOWN_STATE" in (n.title or "")]
        assert said.message.endswith("\ntype: state=dead") and "jobsctl ls" not in said.message  # the bar's words
        assert len(app.screen.rows) == 50


async def test_bare_word_searches_the_key() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await filter_jobs(pilot, "user:7")
        (only,) = app.screen.rows.values()
        assert only.idempotency_key == "user:7"


def offered(app: JobsConsole) -> set[str]:
    """The keys the footer offers on the current screen."""
    return {b.binding.key for b in app.screen.active_bindings.values() if b.binding.show and b.enabled}


async def test_pages_forward_and_back_and_n_and_b_are_offered_only_where_there_is_a_page() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "2")
        first = table(app).keys
        assert "n" in offered(app) and "b" not in offered(app)  # the first page: nothing newer
        await keys(pilot, "n")
        second = table(app).keys
        assert len(second) == 50 and not set(first) & set(second)
        assert "b" in offered(app)
        while app.screen.page.next_cursor:  # type: ignore[attr-defined]
            await keys(pilot, "n")
        assert "n" not in offered(app) and "b" in offered(app)  # the last page: nothing older
        while "b" in offered(app):
            await keys(pilot, "b")
        assert table(app).keys == first


@pytest.mark.parametrize(
    ("state", "kept", "gone"),
    [("ready", {"C"}, {"X", "D"}), ("dead", {"X", "D"}, {"C"}), ("completed", set(), {"X", "C", "D"})],
)
async def test_a_bulk_key_is_offered_only_under_a_filter_whose_state_it_acts_on(
    state: str, kept: set[str], gone: set[str]
) -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await filter_jobs(pilot, f"state={state}")
        bulk = {b.binding.key for b in app.screen.active_bindings.values() if b.enabled} & {"X", "C", "D"}
        assert bulk == kept and not bulk & gone
        await keys(pilot, *sorted(gone)[:1])
        assert not isinstance(app.screen, ConfirmScreen)
        assert not any("Dry run failed" in (n.title or "") for n in app._notifications)


async def test_retry_a_dead_job_from_the_list() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await filter_jobs(pilot, "state=dead name=charge_card")
        target = table(app).selected_key
        await keys(pilot, "x")
        assert isinstance(app.screen, ConfirmScreen)
        await keys(pilot, "y")
        assert await state_of(app, target) is JobState.READY
        assert target not in table(app).keys  # the list re-read: it is no longer dead


async def test_retry_is_refused_on_a_live_job_without_a_modal() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await filter_jobs(pilot, "state=ready")
        target = table(app).selected_key
        await keys(pilot, "x")
        assert not isinstance(app.screen, ConfirmScreen)
        assert await state_of(app, target) is JobState.READY


async def test_cancel_a_live_job_from_the_list() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await filter_jobs(pilot, "state=delayed queue=emails")
        target = table(app).selected_key
        await keys(pilot, "c")
        assert "Cancel delayed job" in str(app.screen.query_one("#confirm-text").render())
        await keys(pilot, "y")
        assert await state_of(app, target) is JobState.CANCELLED
        history = (await app.source.job(target)).history
        assert history[-1].actor == "console:test"


async def test_enter_opens_a_job_and_y_explains_it() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await filter_jobs(pilot, "state=parked")
        await keys(pilot, "enter")
        assert isinstance(app.screen, JobDetailScreen)
        await keys(pilot, "y")
        assert isinstance(app.screen, WhyScreen)
        text = str(app.screen.query_one("#causes").render())
        assert "slots of concurrency:generate_report are held" in text


# --- job detail ---------------------------------------------------------------------------------


async def open_job(pilot: Pilot, text: str) -> JobDetailScreen:
    await filter_jobs(pilot, text)
    await keys(pilot, "enter")
    screen = pilot.app.screen
    assert isinstance(screen, JobDetailScreen)
    return screen


async def test_detail_retry_from_a_chosen_step() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_job(pilot, "name=send_receipt")
        job_id = screen.job_id
        await keys(pilot, "f")
        assert isinstance(app.screen, StepChooser)
        await keys(pilot, "down", "enter")  # "send"
        assert isinstance(app.screen, ConfirmScreen)
        assert "from step send" in str(app.screen.query_one("#confirm-text").render())
        await keys(pilot, "y")
        detail = await app.source.job(job_id)
        assert detail.job.state is JobState.READY
        assert [s.name for s in detail.steps] == ["render"]  # render kept, send discarded


async def test_a_fan_ins_cancel_says_its_jobs_keep_running_and_capital_c_cancels_them_with_it() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_job(pilot, "name=close_month")
        assert screen.detail is not None
        statements = {a.id: a.state for a in screen.detail.awaited}
        live = sorted(i for i, s in statements.items() if s in (JobState.RUNNING, JobState.READY))
        assert len(live) == 2
        await keys(pilot, "c")
        said = str(app.screen.query_one("#confirm-text").render())
        assert "The 2 live jobs it fanned out keep running (C cancels them with it)." in said
        await keys(pilot, "escape")
        assert await state_of(app, screen.job_id) is JobState.SUSPENDED

        await keys(pilot, "C")
        assert isinstance(app.screen, ConfirmScreen)
        said = str(app.screen.query_one("#confirm-text").render())
        assert "and the 2 live jobs below it (1 running, 1 ready)" in said
        assert "the 2 below it that have settled stay as they are" in said
        await keys(pilot, "y")
        assert await state_of(app, screen.job_id) is JobState.CANCELLED
        after = {i: await state_of(app, i) for i in statements}
        assert [after[i] for i in live] == [JobState.CANCELLED, JobState.CANCELLED]
        assert all(after[i] is JobState.COMPLETED for i in statements if i not in live)
        history = (await app.source.job(live[0])).history
        assert history[-1].actor == "console:test" and history[-1].note == f"with job {screen.job_id}"


async def test_a_flow_whose_read_gets_no_answer_says_the_database_is_unreachable_and_changes_nothing() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_job(pilot, "name=close_month")

        async def frozen(job_id: str) -> list[object]:
            raise NoAnswer(3.0)

        app.source.children = frozen  # type: ignore[method-assign]
        await keys(pilot, "C")
        assert not isinstance(app.screen, ConfirmScreen)
        (said,) = [n for n in app._notifications if n.severity == "error"]
        assert (said.title, said.message) == (
            "database unreachable",
            "no answer within 3s: the server is frozen, overloaded or cut off",
        )
        assert not app.activity[-1].ok and app.activity[-1].summary.startswith("database unreachable: no answer")
        assert await state_of(app, screen.job_id) is JobState.SUSPENDED


async def test_a_dead_fan_ins_retry_says_its_dead_jobs_stay_dead_and_capital_x_retries_them_with_it() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_job(pilot, "name=close_month state=dead")
        assert screen.detail is not None
        statements = {a.id: a.state for a in screen.detail.awaited}
        (dead,) = [i for i, s in statements.items() if s is JobState.DEAD]
        shown = str(screen.query_one("#awaited").render())
        assert "w: open the first dead · X: retry the job with those dead" in shown
        await keys(pilot, "x")
        said = str(app.screen.query_one("#confirm-text").render())
        assert "The dead job it fanned out stays dead and its wait answers it as it was (X retries it too)." in said
        await keys(pilot, "escape")
        assert await state_of(app, screen.job_id) is JobState.DEAD

        await keys(pilot, "X")
        assert isinstance(app.screen, ConfirmScreen)
        said = str(app.screen.query_one("#confirm-text").render())
        assert "and the 1 dead job below it, the deepest first" in said
        assert "The 2 below it that are not dead (2 completed) stay as they are." in said
        await keys(pilot, "y")
        assert await state_of(app, screen.job_id) is JobState.READY
        after = await app.source.job(screen.job_id)
        assert after.history[-1].data["step"] == "statements"  # it looks at them afresh; the fan-out replays
        assert await state_of(app, dead) is JobState.READY
        assert [await state_of(app, i) for i in statements if i != dead] == [JobState.COMPLETED] * 2
        history = (await app.source.job(dead)).history
        assert history[-1].actor == "console:test" and history[-1].note == f"with job {screen.job_id}"


async def test_a_fan_in_whose_wait_timed_out_says_its_retry_times_out_again_and_capital_x_runs_the_wait_again() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_job(pilot, "name=close_month state=dead")
        assert screen.detail is not None
        # The same job had its wait time out, none of its jobs dead (set again before each key: a
        # dismissed confirmation re-reads the job).
        steps = tuple(replace(s, status="timed-out") if s.kind == "jobs" else s for s in screen.detail.steps)
        awaited = tuple(replace(a, state=JobState.COMPLETED) for a in screen.detail.awaited)
        timed_out = replace(screen.detail, steps=steps, awaited=awaited)
        screen.detail = timed_out
        await keys(pilot, "x")
        said = str(app.screen.query_one("#confirm-text").render())
        assert said.endswith("Its wait for jobs timed out, and answers that again at once (X runs the wait again).")
        await keys(pilot, "escape")
        screen.detail = timed_out
        assert screen.check_action("retry_children", ()) is True
        await keys(pilot, "X")
        assert isinstance(app.screen, ConfirmScreen)
        said = str(app.screen.query_one("#confirm-text").render())
        assert "Its wait for jobs timed out: it runs again from that wait, which looks at them afresh" in said
        await keys(pilot, "escape")
        assert await state_of(app, screen.job_id) is JobState.DEAD


async def test_a_dead_fan_outs_retry_says_nothing_of_a_wait_when_it_did_not_wait() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_job(pilot, "name=close_month state=dead")
        assert screen.detail is not None
        # The same job had it only enqueued its statements: a retry replays the enqueue, no wait.
        screen.detail = replace(screen.detail, steps=tuple(s for s in screen.detail.steps if s.kind == "enqueue"))
        assert screen.detail.awaited_as == "enqueued"
        await keys(pilot, "x")
        said = str(app.screen.query_one("#confirm-text").render())
        assert said.endswith("it becomes ready now with a fresh attempt budget.")


async def test_detail_retry_and_its_audit_note() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_job(pilot, "name=send_receipt")
        await keys(pilot, "x")
        await pilot.click("#confirm-note")
        await pilot.press(*"smtp fixed")
        await keys(pilot, "enter", "y")  # Enter leaves the note; y confirms
        detail = await app.source.job(screen.job_id)
        assert detail.job.state is JobState.READY
        assert detail.history[-1].note == "smtp fixed"
        assert "smtp fixed" in str(app.screen.query_one("#history").render())


async def test_detail_cancel_a_sleeping_job() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_job(pilot, "user:7")
        assert "Sleeping until" in str(screen.query_one("#why-line").render())
        await keys(pilot, "c", "y")
        assert await state_of(app, screen.job_id) is JobState.CANCELLED


async def test_detail_send_the_awaited_event() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_job(pilot, "user:8")
        assert "workspace.approved" in str(screen.query_one("#why-line").render())
        await keys(pilot, "e")
        assert "Send event workspace.approved" in str(app.screen.query_one("#confirm-text").render())
        await keys(pilot, "y")
        d = await app.source.job(screen.job_id)
        assert d.job.state is JobState.SUSPENDED and d.job.run_at <= app.source.now()  # woken: due now
        # The job's history says the event woke it, which one and who sent it.
        (sent,) = [h for h in d.history if h.kind == "event"]
        assert (sent.actor, sent.data["event"]) == (app.source.actor, "workspace.approved")
        await pilot.press("r")
        await settle(pilot)
        shown = str(screen.query_one("#history").render())
        assert f"event          by {app.source.actor}  workspace.approved" in shown


async def test_detail_offers_only_what_the_state_allows() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_job(pilot, "user:8")  # suspended
        assert screen.check_action("cancel", ()) and screen.check_action("send_event", ())
        assert not screen.check_action("retry", ()) and not screen.check_action("retry_from_step", ())
        await keys(pilot, "x")
        assert not isinstance(app.screen, ConfirmScreen)


async def test_detail_unfolds_long_input() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_job(pilot, "input.to=sam@example.com")
        assert "more lines folded" in str(screen.query_one("#input").render())
        await keys(pilot, "u")
        assert "more lines folded" not in str(screen.query_one("#input").render())


# --- dead letters -------------------------------------------------------------------------------


async def test_bulk_retry_of_a_group_shows_the_dry_run_then_retries_all_of_it() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "3")
        await keys(pilot, "down")  # charge_card / X_CARD_DECLINED, 5 jobs
        assert app.screen.groups[table(app).selected_key].count == 5
        await keys(pilot, "x")
        body = str(app.screen.query_one("#confirm-text").render())
        assert "5 jobs match" in body and "X_CARD_DECLINED" in body and "terminal" in body
        await keys(pilot, "y")
        assert isinstance(app.screen, ResultScreen)
        assert "5 retried" in str(app.screen.query_one("#result-text").render())
        await keys(pilot, "enter")
        assert isinstance(app.screen, DeadLettersScreen)
        assert not await ids(app, state=JobState.DEAD, name="charge_card")
        assert "charge_card" not in " ".join(table(app).keys)


async def bulk_retry_of(pilot: Pilot, text: str) -> None:
    """The Dead letters screen filtered by ``text``, then X: the bulk retry's confirmation."""
    await keys(pilot, "3", "slash")
    await pilot.press(*text)
    await keys(pilot, "enter", "X")


async def test_bulk_retry_everything_matching_the_filter_paced_with_a_note() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await bulk_retry_of(pilot, "queue=emails")
        body = str(app.screen.query_one("#confirm-text").render())
        assert "4 jobs match" in body and "queue=emails" in body
        await pilot.click("#confirm-pace")
        await pilot.click("#confirm-note")
        await pilot.press(*"INC-9")
        await keys(pilot, "enter")  # Enter in the note moves on; it does not confirm
        assert isinstance(app.screen, ConfirmScreen)
        await keys(pilot, "y")
        text = str(app.screen.query_one("#result-text").render())
        assert "4 retried" in text and "Paced at 10/s" in text and "INC-9" in text
        await keys(pilot, "enter")
        assert not await ids(app, state=JobState.DEAD, queue="emails")
        assert len(await ids(app, state=JobState.DEAD)) == 9  # the other queues untouched


async def test_a_bulk_retry_offers_with_children_only_over_fan_ins_and_ticked_brings_each_tree_back() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await bulk_retry_of(pilot, "queue=emails")
        assert isinstance(app.screen, ConfirmScreen)
        assert not app.screen.query("#confirm-children")  # no fan-in among them: not offered
        await keys(pilot, "escape", "slash", "ctrl+u")
        await pilot.press(*"name=close_month")
        await keys(pilot, "enter", "X")
        body = str(app.screen.query_one("#confirm-text").render())
        assert "1 fan-in among them waited for jobs that did not complete" in body
        assert "retried with children, each runs its wait again" in body
        (fan_in,) = await ids(app, state=JobState.DEAD, name="close_month")
        awaited = (await app.source.job(fan_in)).awaited
        (dead,) = [a.id for a in awaited if a.state is JobState.DEAD]
        await pilot.click("#confirm-children")
        await keys(pilot, "y")
        assert isinstance(app.screen, ResultScreen)
        said = str(app.screen.query_one("#result-text").render())
        assert said.startswith("1 retried, with 1 dead job below them; 1 runs its wait for jobs again, looking afresh.")
        await keys(pilot, "enter")
        after = await app.source.job(fan_in)
        assert after.job.state is JobState.READY
        assert after.history[-1].data["step"] == "statements"  # its wait runs again, not replayed
        assert await state_of(app, dead) is JobState.READY
        assert (await app.source.job(dead)).history[-1].note == f"with job {fan_in}"


async def test_a_paced_bulk_shows_its_totals_as_it_runs_and_s_stops_it_between_batches() -> None:
    app = console()
    clock = app.source.engine.clock
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "3", "X")
        await pilot.click("#confirm-pace")  # 10 a second: batches of 10, a second's pace after each
        await keys(pilot, "y")
        assert isinstance(app.screen, ProgressScreen)
        while clock.sleepers == 0:  # the first batch landed; its pace is running
            await pilot.pause()
        await settle(pilot)
        assert str(app.screen.query_one("#progress-text").render()) == "10 of 13 retried, 0 skipped. About 1s left."
        await keys(pilot, "2")  # the screen under it is held: no key reaches it
        assert isinstance(app.screen, ProgressScreen)
        await keys(pilot, "s")
        assert isinstance(app.screen, ResultScreen)
        assert str(app.screen.query_one("#result-title").render()) == "Retry: stopped"
        said = str(app.screen.query_one("#result-text").render())
        assert said == (
            "Stopped by you: 10 retried, 0 skipped (no longer eligible or deduped). The rest are as they were."
            " Paced at 10/s."
        )
        assert len(await ids(app, state=JobState.DEAD)) == 3  # no batch after the stop, whatever the clock does
        clock.advance(5)
        await settle(pilot)
        assert len(await ids(app, state=JobState.DEAD)) == 3


async def test_a_bulk_refused_at_once_says_why_and_leaves_no_progress_window_behind() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:

        async def refused(*a: object, **kw: object) -> object:
            raise JobsError("X_KEY_HELD", cause="a live job holds the key", fix="jobsctl show ID")

        app.source.bulk = refused  # type: ignore[method-assign]
        await keys(pilot, "3", "X", "y")
        assert isinstance(app.screen, ResultScreen)
        assert "X_KEY_HELD: a live job holds the key" in str(app.screen.query_one("#result-text").render())
        await keys(pilot, "enter")
        assert isinstance(app.screen, DeadLettersScreen)  # nothing left over it
        assert not [s for s in app.screen_stack if isinstance(s, ProgressScreen)]


async def test_bulk_cancel_with_nothing_live_says_so_without_a_modal() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "3", "down", "c")  # charge_card: no live job fails with X_CARD_DECLINED
        assert not isinstance(app.screen, ConfirmScreen)
        assert any("Nothing to cancel" in n.message for n in app._notifications)


async def test_bulk_cancel_of_a_group_cancels_its_live_retries() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "3")
        key = next(k for k, g in app.screen.groups.items() if g.name == "send_email")
        table(app).move_cursor(row=table(app).keys.index(key))
        await keys(pilot, "c")  # the delayed send_email retrying on X_SMTP_TIMEOUT
        assert "1 job match" in str(app.screen.query_one("#confirm-text").render())
        await keys(pilot, "y", "enter")
        live = await app.source.jobs(JobFilter(name="send_email", error_code="X_SMTP_TIMEOUT"))
        assert {j.state for j in live.items} == {JobState.DEAD, JobState.CANCELLED}


async def test_enter_on_a_group_lists_its_jobs() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "3", "down", "enter")
        assert isinstance(app.screen, JobsScreen)
        assert len(app.screen.rows) == 5
        assert {(j.name, j.error_code) for j in app.screen.rows.values()} == {("charge_card", "X_CARD_DECLINED")}


# --- read-only ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [("1", "p"), ("3", "x"), ("3", "X"), ("2", "c")])
async def test_read_only_offers_no_mutating_action(path: tuple[str, ...]) -> None:
    app = JobsConsole(seeded_source(read_only=True), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, *path)
        assert not isinstance(app.screen, ConfirmScreen)
        footer = " ".join(
            b.binding.description for b in app.screen.active_bindings.values() if b.binding.show and b.enabled
        )
        assert "Retry" not in footer and "Pause" not in footer and "Cancel" not in footer


async def test_read_only_flag_on_the_app_makes_the_source_refuse() -> None:
    from engine.errors import JobsError

    source = seeded_source()
    app = JobsConsole(source, read_only=True, refresh=60)
    assert source.read_only
    dead = (await source.jobs(JobFilter(state=JobState.DEAD))).items[0].id
    with pytest.raises(JobsError) as err:
        await source.retry(dead)
    assert err.value.code == "X_READ_ONLY"
    assert app.source is source


async def test_palette_lists_actions_of_the_screen_but_not_mutating_ones_read_only() -> None:
    app = JobsConsole(seeded_source(read_only=True), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "3")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert any(t.startswith("Filter") for t in titles) and any(t.startswith("Workers") for t in titles)
        assert not any("Retry" in t for t in titles)
        assert any(t.startswith("Backfills") and "[7]" in t for t in titles)
        assert any(t.startswith("Outbox") and "[6]" in t for t in titles)


async def test_palette_runs_an_action() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        cmd = next(c for c in app.get_system_commands(app.screen) if c.title.startswith("Dead letters"))
        await cmd.callback()
        await settle(pilot)
        assert app.current_mode == "dead_letters"


async def test_jobs_bulk_cancel_reaches_every_page_of_the_filter() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await filter_jobs(pilot, "queue=emails state=delayed")
        shown = len(app.screen.rows)
        await keys(pilot, "C")
        body = str(app.screen.query_one("#confirm-text").render())
        assert f"{shown} jobs match" in body and "queue=emails" in body
        await keys(pilot, "y", "enter")
        assert not await ids(app, queue="emails", state=JobState.DELAYED)
        assert len(await ids(app, queue="emails", state=JobState.CANCELLED)) == shown


async def test_ctrl_c_quits_like_q() -> None:
    from console.app import JobsConsole
    from console.demo.world import seeded_source

    app = JobsConsole(seeded_source())
    async with app.run_test(size=(120, 36)) as pilot:
        assert app.return_code is None
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.return_code == 0


async def test_read_only_dead_letters_name_no_action_keys() -> None:
    from textual.widgets import Static

    from console.app import JobsConsole
    from console.demo.world import seeded_source

    for read_only in (False, True):
        app = JobsConsole(seeded_source(read_only=read_only), read_only=read_only)
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.press("3")
            await app.workers.wait_for_complete()
            await pilot.pause()
            hint = str(app.screen.query_one("#detail", Static).render())
            assert "last error" in hint
            assert ("x/c/d: retry/cancel/discard" in hint) is (not read_only)
