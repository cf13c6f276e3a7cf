"""What a confirmation says: leaving one never reads as a cancel having happened, and an option
left off shows an empty box (with colour or without)."""

from __future__ import annotations

from textual.widgets import Checkbox

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.screens.confirm import ConfirmScreen
from tests.console.conftest import SMALL, settle


async def test_leaving_a_cancel_confirmation_says_nothing_changed_and_never_cancelled() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        for key in ("2", "slash", *"state=delayed", "enter", "c"):
            await pilot.press(key)
            await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await settle(pilot)
        said = [n.message for n in app._notifications]
        assert said and said[-1] == "Left as it was: nothing changed.", said
        assert not any("Cancelled" in m for m in said), said


async def test_an_option_left_off_draws_an_empty_box_and_a_ticked_one_an_x() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("3", "X")
        await settle(pilot)
        pace = app.screen.query_one("#confirm-pace", Checkbox)
        assert pace.value is False
        assert str(pace.render()).startswith("▐ ▌"), str(pace.render())
        pace.value = True
        await settle(pilot)
        assert str(pace.render()).startswith("▐X▌"), str(pace.render())


async def test_draining_a_stale_worker_says_it_is_stale_and_sees_the_request_only_if_it_beats_again() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        view = await app.source.workers()
        (stale,) = [w for w in view.workers if w.stale]
        table = app.screen.query_one("#workers")
        await pilot.press(*["down"] * table.keys.index(stale.id), "d")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        body = str(app.screen.query_one("#confirm-text").render())
        assert f"Stale: {stale.id} (no heartbeat for" in body, body
        assert "only if it beats again" in body
        await pilot.press("n", "up", "d")  # a live one: no word of staleness
        await settle(pilot)
        assert "Stale:" not in str(app.screen.query_one("#confirm-text").render())


async def test_resuming_a_paused_queue_says_who_paused_it_when_why_and_how_many_ready_jobs_it_lets_go() -> None:
    from console.demo.world import PAUSED
    from console.format import relative_at, stamp

    queue, by, note = PAUSED
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        view = await app.source.queues()
        q = next(q for q in view.queues if q.name == queue)
        assert q.paused and q.ready.value > 0
        await pilot.press("end", "p")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        text = str(app.screen.query_one("#confirm-text").render())
        now = app.source.now()
        assert f"Paused by {by} {relative_at(q.paused_at, now)} ({stamp(q.paused_at, now)} UTC): “{note}”" in text, text
        assert f"{q.ready} ready jobs will start being claimed" in text, text


async def test_a_discard_confirm_says_what_jobsctl_discard_says_deleted_with_its_attempts_and_steps() -> None:
    from console import actions
    from engine.actions.jobs import DISCARDED

    said = "its attempts and steps go with it; its history keeps who discarded it, when and the note"
    assert DISCARDED == said.replace("go with it", "went with it")  # the CLI's words, after the fact
    telling = [a for a in actions.ACTIONS if "discard" in a.action and "deleted" in a.help]
    assert len(telling) == 3 and all(said in a.help for a in telling)  # job detail, jobs, a group
    assert not any("audit" in a.help for a in actions.ACTIONS if "discard" in a.action)
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        for key in ("2", "slash", *"state=dead", "enter", "enter", "d"):
            await pilot.press(key)
            await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        text = " ".join(str(app.screen.query_one("#confirm-text").render()).split())
        assert f"it is deleted; {said}. It cannot be retried afterwards." in text, text
        assert "discarded entry" not in text
