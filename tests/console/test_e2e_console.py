"""End to end: the real `jobs-console` (the CLI's own Source and App) on a real PostgreSQL.

Jobs are enqueued through the engine and run by the real worker (the demo application's
`charge_card`), so the dead letter on screen is one the engine really made. The operator then
retries it from the Dead letters screen through the confirmation modal, with an incident note,
and the test reads the database: the job is claimable again and the audit trail names who did
it, with the note. Every wait is on an event (the worker's execution callback, Textual's
workers), never a sleep.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from textual.widgets import Input

from console.cli import Options, make_app, open_source
from console.demo import jobs as demo_jobs
from console.screens.confirm import ConfirmScreen
from engine import Enqueue, connect
from engine.types import JobState
from tests.console.conftest import settle


@pytest.fixture(autouse=True)
def no_pretend_work() -> Iterator[None]:
    before, demo_jobs.PACE.scale = demo_jobs.PACE.scale, 0.0
    yield
    demo_jobs.PACE.scale = before


async def on_top(pilot, kind: type):  # type: ignore[no-untyped-def]
    """Wait until a screen of ``kind`` is pushed. An action's flow is a worker that waits for its
    modal to be dismissed, so waiting for every worker to finish would wait forever."""
    app = pilot.app
    if not isinstance(app.screen, kind):
        arrived = asyncio.Event()
        watcher = app.screen

        def changed(screen) -> None:  # type: ignore[no-untyped-def]
            if isinstance(screen, kind):
                arrived.set()

        app.screen_change_signal.subscribe(watcher, changed, immediate=True)
        try:
            await asyncio.wait_for(arrived.wait(), timeout=30)
        finally:
            app.screen_change_signal.unsubscribe(watcher)
    await pilot.pause()
    return app.screen


async def run_until_settled(eng, specs: list[Enqueue], expect: list[str]) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Enqueue ``specs``, run the real worker until each job reached its expected outcome."""
    results = await eng.aenqueue_many(specs)
    ids = [r.id for r in results]
    outcomes: dict[str, str] = {}
    done = asyncio.Event()

    def seen(ex) -> None:  # type: ignore[no-untyped-def]
        if ex.job_id in ids and ex.outcome in ("dead", "completed"):
            outcomes[ex.job_id] = ex.outcome
            if len(outcomes) == len(ids):
                done.set()

    async with eng.worker(
        [demo_jobs.charge_card], queues=["billing"], concurrency=2, on_execution=seen, maintenance=False
    ):
        await asyncio.wait_for(done.wait(), timeout=30)
    assert sorted(outcomes.values()) == sorted(expect)
    return {jid: outcomes[jid] for jid in ids}


async def test_retry_a_dead_letter_through_the_console_on_postgres(pg_dsn: str) -> None:
    eng = connect(pg_dsn)
    try:
        outcome = await run_until_settled(
            eng,
            [
                Enqueue(
                    demo_jobs.charge_card,
                    {"invoice_id": 42, "amount_cents": 1999, "card": "declined"},
                    tenant="acme",
                ),
                Enqueue(demo_jobs.charge_card, {"invoice_id": 43, "amount_cents": 500, "card": "ok"}, tenant="acme"),
            ],
            expect=["dead", "completed"],
        )
        dead_id = next(jid for jid, o in outcome.items() if o == "dead")
        dead = await eng.aget(dead_id)
        assert (dead.state, dead.stop_reason, dead.error_code) == (JobState.DEAD, "terminal", "X_CARD_DECLINED")

        # The console exactly as `jobs-console --dsn ...` builds it (open_source runs its own loop).
        opts = Options(refresh=60.0)
        source = await asyncio.to_thread(open_source, pg_dsn, opts)
        app = make_app(source, opts)
        async with app.run_test(size=(120, 36)) as pilot:
            await settle(pilot)
            await pilot.press("3")  # Dead letters
            await settle(pilot)
            assert "X_CARD_DECLINED" in _screen_text(app)
            await pilot.press("enter")  # the group's jobs
            await settle(pilot)
            assert dead_id[-12:] in _screen_text(app)
            await pilot.press("x")  # retry the selected dead job
            modal = await on_top(pilot, ConfirmScreen)
            assert "charge_card" in str(modal.title_text) + str(modal.body)
            assert (await eng.aget(dead_id)).state is JobState.DEAD  # nothing changes before the yes
            modal.query_one("#confirm-note", Input).focus()
            await pilot.press(*"INC-42", "enter", "y")  # the note; Enter leaves it, y confirms
            await settle(pilot)
            told = [(n.title, n.message) for n in app._notifications]
            assert ("Done", told[-1][1]) == told[-1], told  # the result, said on screen
        await source.engine.aclose()

        row = await eng.aget(dead_id)
        assert row.state is JobState.READY
        assert row.attempt < row.max_attempts  # a fresh attempt to spend
        history = await eng.driver.job_history(job_id=dead_id)
        retry = [h for h in history if h.kind == "retried"]
        assert retry and retry[-1].note == "INC-42" and (retry[-1].actor or "").startswith("console:")
        other = next(jid for jid, o in outcome.items() if o == "completed")
        assert (await eng.aget(other)).state is JobState.COMPLETED  # only the chosen job changed
    finally:
        await eng.aclose()


def _screen_text(app) -> str:  # type: ignore[no-untyped-def]
    """What is on the terminal now (an SVG: words without spaces can be searched in it)."""
    return app.export_screenshot()
