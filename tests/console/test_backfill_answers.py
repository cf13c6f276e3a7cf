"""A Backfills action acts only on y, on the pass its confirmation named, and says a lost
connection as an action that may not have landed, never crashing. Checked on the ledger and the
pass's job, not the screen alone."""

from __future__ import annotations

from typing import Any

from console.app import JobsConsole
from console.demo.accounts import MemoryAccounts, declare
from console.demo.world import seeded_source
from console.screens.confirm import ConfirmScreen
from console.widgets.keyed_table import KeyedTable
from engine.types import JobState
from tests.console.conftest import SIZE, drive


def backfills_app() -> JobsConsole:
    """The seeded hour, whose accounts_plan_tier pass runs in production (third row)."""
    return JobsConsole(seeded_source(), refresh=60)


def declared_app() -> JobsConsole:
    """No hour: the backfills declared, none started."""
    return JobsConsole(seeded_source(empty=True, backfills=declare(MemoryAccounts())), refresh=60)


async def ledger(app: JobsConsole, name: str) -> list[Any]:
    return await app.source.engine.driver.backfill_runs(names=[name], environment="production", limit=50)


async def test_n_or_escape_on_a_backfill_start_starts_no_pass() -> None:
    app = declared_app()
    async with app.run_test(size=SIZE) as pilot:
        for key, answer in (("d", "n"), ("w", "escape"), ("d", "escape"), ("w", "n")):
            await drive("7", key)(pilot)
            assert isinstance(app.screen, ConfirmScreen), key
            await drive(answer)(pilot)
            assert not isinstance(app.screen, ConfirmScreen)
    assert await ledger(app, "accounts_email_lower") == []


async def test_n_on_a_backfill_cancel_leaves_the_pass_running() -> None:
    app = backfills_app()
    async with app.run_test(size=SIZE) as pilot:
        await drive("7", "down", "down", "c")(pilot)
        assert "Cancel the running" in str(app.screen.query_one("#confirm-text").render())
        await drive("n")(pilot)
    run = (await ledger(app, "accounts_plan_tier"))[0]
    assert run.status == "running"
    job = await app.source.engine.driver.job_get(job_id=run.job_id)
    assert job is not None and job.state is JobState.RUNNING


async def test_a_backfill_cancel_cancels_the_pass_its_confirm_named_though_the_cursor_moved() -> None:
    app = backfills_app()
    async with app.run_test(size=SIZE) as pilot:
        await drive("7", "down", "down", "c")(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        board = app.screen_stack[-2].query_one(KeyedTable)
        board.move_cursor(row=0)  # the row under the question changed while it was open
        await drive("y")(pilot)
    run = (await ledger(app, "accounts_plan_tier"))[0]
    assert run.status == "cancelled"


async def test_a_lost_connection_as_a_backfill_starts_says_it_may_not_have_landed_and_never_crashes() -> None:
    app = declared_app()
    async with app.run_test(size=SIZE) as pilot:
        await drive("7", "d")(pilot)
        assert isinstance(app.screen, ConfirmScreen)

        async def lost(*args: object, **kwargs: object) -> object:
            raise ConnectionRefusedError("connection to server at db.internal:5432 refused")

        app.source.start_backfill = lost  # type: ignore[method-assign]
        await drive("y")(pilot)
        titles = [n.title or "" for n in app._notifications]
        assert any("may not have landed" in t for t in titles), titles
        assert not app.activity[-1].ok and "ConnectionRefusedError" in app.activity[-1].summary
        assert app.is_running and app._exception is None
