"""What the console offers matches what the engine does with it: a dead-letter group's jobs keep
the screen's whole filter, a confirmation offers a note only where the engine's call takes one,
read-only mode names no key it does not offer, and the help says what the keys do."""

from __future__ import annotations

from datetime import timedelta

from textual.widgets import Input

from console import actions
from console.app import JobsConsole
from console.demo.world import START
from console.screens.confirm import ConfirmScreen
from console.screens.dead_letters import DeadLettersScreen
from console.screens.help import PALETTE
from console.screens.job_detail import JobDetailScreen
from console.screens.jobs import JobsScreen
from console.widgets.filter_bar import FilterBar
from engine.types import JobState
from tests.console.conftest import SIZE, SMALL
from tests.console.test_activity_shows_the_audit_log import shown
from tests.console.test_operator_actions import console, keys


def text_of(app: JobsConsole, selector: str) -> str:
    return str(app.screen.query_one(selector).render())


# --- dead letters: a group's jobs under the screen's whole filter ----------------------------------


async def test_a_dead_letter_groups_jobs_keep_the_screens_since_and_until() -> None:
    since, until = START + timedelta(minutes=30), START + timedelta(hours=2)
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "3", "slash")
        bar = app.screen.query_one(FilterBar)
        bar.value = f"since={since.isoformat()} until={until.isoformat()}"
        await keys(pilot, "enter")
        screen = app.screen
        assert isinstance(screen, DeadLettersScreen)
        (key,) = [k for k, g in screen.groups.items() if g.name == "charge_card"]
        group = screen.groups[key]
        assert group.count == 3  # of its 5, the 3 that died in the last half hour
        screen.query_one("#groups").move_cursor(row=list(screen.groups).index(key))  # type: ignore[attr-defined]
        await keys(pilot, "x")  # the group's dry run counts what the row counts
        assert isinstance(app.screen, ConfirmScreen) and "3 jobs match" in text_of(app, "#confirm-text")
        await keys(pilot, "n", "enter")
        jobs = app.screen
        assert isinstance(jobs, JobsScreen)
        where = jobs.where
        assert (where.since, where.until) == (since, until)
        assert (where.name, where.error_code, where.state) == ("charge_card", "X_CARD_DECLINED", JobState.DEAD)
        assert where.stop_reason == group.stop_reason is not None  # the group's stop reason, not every one
        assert jobs.page is not None and len(jobs.page.items) == group.count  # the list the row counted


# --- the note: offered where the engine's call keeps it --------------------------------------------


async def test_a_queue_resumes_confirm_takes_a_note_that_reaches_the_audit_log() -> None:
    # The pause row goes at a resume, its note with it; the audit log keeps the resume's own note.
    app = console()
    async with app.run_test(size=SMALL) as pilot:
        await keys(pilot, "end", "p")  # webhooks, paused
        assert isinstance(app.screen, ConfirmScreen)
        assert "Resume queue webhooks" in text_of(app, "#confirm-text")
        await pilot.click("#confirm-note")
        await pilot.press(*"INC-2041: receiver fixed")
        await keys(pilot, "enter", "y")  # Enter leaves the note; y confirms
        assert app.activity[-1].summary == "Queue webhooks resumed."
        (latest,) = await app.source.audit(limit=1)
        said = (latest.actor, latest.action, latest.target, latest.note)
        assert said == ("console:test", "queue.resume", "webhooks", "INC-2041: receiver fixed")
        await keys(pilot, "a")
        top = shown(app)[1:3]  # the Activity screen's audit log, newest first
        assert top[0].endswith("console:test resumed queue webhooks") and top[1].strip() == "“INC-2041: receiver fixed”"


async def test_sending_an_event_offers_no_note_the_engine_would_drop() -> None:
    app = console()
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "2", "slash", *"search=user:8", "enter", "enter", "e")
        assert isinstance(app.screen, ConfirmScreen)
        assert "Send event workspace.approved" in text_of(app, "#confirm-text")
        assert not app.screen.query(Input)  # no note field
        await keys(pilot, "n", "escape", "escape", "1", "down", "p")  # a pause keeps its note: offered
        assert isinstance(app.screen, ConfirmScreen) and app.screen.query("#confirm-note")


# --- read-only: no hint names a key that is not offered ----------------------------------------------


async def test_read_only_marks_say_only_that_escape_clears_them() -> None:
    # the newest job is live: of x, c and d only c acts on it
    for read_only, said in ((False, "1 marked (c acts on them; Esc clears)"), (True, "1 marked (Esc clears)")):
        app = console(read_only=read_only)
        async with app.run_test(size=SIZE) as pilot:
            await keys(pilot, "2", "space")
            assert said in text_of(app, "#pager")


async def test_read_only_fan_in_names_w_but_not_c() -> None:
    for read_only in (False, True):
        app = console(read_only=read_only)
        async with app.run_test(size=SIZE) as pilot:
            await keys(pilot, "2", "slash", *"name=close_month", "enter", "enter")
            assert isinstance(app.screen, JobDetailScreen)
            awaited = text_of(app, "#awaited")
            assert "w: open the first still live" in awaited
            assert ("C: cancel the job with those still live" in awaited) is not read_only


# --- the help -----------------------------------------------------------------------------------------


def test_help_says_what_the_palette_and_the_keys_do() -> None:
    (slash,) = [a for a in actions.for_scope("dead_letters") if a.key == "slash"]
    assert "input.FIELD=V" in slash.help and "id/key" in slash.help  # as the bar's placeholder offers
    (retry,) = [a for a in actions.for_scope("backfills") if a.key == "x"]
    assert "stalled" in retry.help
    (unfold,) = [a for a in actions.for_scope("job_detail") if a.key == "u"]
    assert "traceback" in unfold.help and "folds them back" in unfold.help
    assert "by name" in PALETTE and "description" in PALETTE and "every action" not in PALETTE
