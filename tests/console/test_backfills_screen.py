"""The Backfills screen (key 7): snapshots for nothing declared, pending in two environments,
running with progress (the seeded hour), failed, stalled, the confirm dialog (also at 80x24), a
refused start and read-only; Pilot checks of each action's effect on the ledger (dry run, write
pass, forced rerun, cancel, retry from the batch a pass failed on) and of read-only refusal.

The scenarios are played through engine.testing's PassPlayer (the operations a pass uses) on the
seeded memory engine, from ten minutes before its NOW, over the app's in-process accounts table."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest

from console.app import JobsConsole
from console.demo.accounts import MemoryAccounts, declare
from console.demo.world import NOW, seeded_source
from console.screens.backfill_text import progress_text
from console.screens.confirm import ConfirmScreen, ResultScreen
from console.source import Source
from engine.backfills import BackfillControl, Backfills
from engine.errors import JobsError
from engine.testing import Factory, PassPlayer
from engine.types import JobState
from tests.console.conftest import SIZE, SMALL, drive

Play = Callable[[Factory, Callable[[str], BackfillControl]], Awaitable[None]]
LOCK_TIMEOUT = JobsError(
    "X_LOCK_TIMEOUT",
    cause="canceling statement due to lock timeout on demo_app.accounts (a migration holds it)",
    fix="retry the pass once the migration is done",
)


def _even_only(bf: Backfills, store: MemoryAccounts) -> None:
    """A sweep whose source narrows (even ids only) where its count does not: it stalls."""
    read = store.source("plan_tier")

    def even(conn: Any, after: Any, size: int) -> tuple[list[Any], Any]:
        rows, cursor = read(conn, after, size * 2)
        rows = [r for r in rows if r["id"] % 2 == 0][:size]
        return rows, rows[-1]["id"] if rows else cursor

    @bf.backfill("accounts_plan_tier_even", source=even, count=store.count("plan_tier"), batch_size=1000)
    def accounts_plan_tier_even(batch: Any) -> None:
        store.fill(batch.conn, "plan_tier", batch.rows)


def scenario(play: Play, *, empty: bool = True, stalls: bool = False, read_only: bool = False) -> Source:
    """The seeded source (empty: no hour, only the declarations) with ``play`` run from NOW - 10 min."""
    store = MemoryAccounts()
    bf = declare(store)
    if stalls:
        _even_only(bf, store)
    source = seeded_source(empty=empty, backfills=bf, read_only=read_only)
    eng = source.engine

    def control(actor: str, environment: str = "production") -> BackfillControl:
        return BackfillControl(eng, bf, actor=actor, environment=environment)

    async def go() -> None:
        eng.clock.set(NOW - timedelta(minutes=10))  # type: ignore[attr-defined]
        await play(Factory.of(eng), control)
        eng.clock.set(NOW)  # type: ignore[attr-defined]

    with ThreadPoolExecutor(1) as pool:  # a test's own loop may be running: play on another
        pool.submit(asyncio.run, go()).result()
    return source


async def _failed(f: Factory, control: Callable[[str], BackfillControl]) -> None:
    p = await PassPlayer.start(f, control("alice"), "accounts_email_lower", write=True)
    await p.batches(4)
    await p.fail(LOCK_TIMEOUT, attempts=3)  # every attempt fails at batch 5: dead


async def _stalled(f: Factory, control: Callable[[str], BackfillControl]) -> None:
    p = await PassPlayer.start(f, control("alice"), "accounts_plan_tier_even", write=True)
    assert await p.finish() == "stalled"


async def _applied(f: Factory, control: Callable[[str], BackfillControl]) -> None:
    p = await PassPlayer.start(f, control("alice"), "accounts_email_lower", write=True)
    assert await p.finish() == "completed"


async def _nothing(f: Factory, control: Callable[[str], BackfillControl]) -> None:
    return None


def _app(source: Source) -> JobsConsole:
    return JobsConsole(source, refresh=60)


async def _ledger(source: Source, name: str, environment: str = "production") -> list[Any]:
    return await source.engine.driver.backfill_runs(names=[name], environment=environment, limit=50)


# --- snapshots -------------------------------------------------------------------------------------


def test_backfills_nothing_declared(snap_compare) -> None:
    app = _app(seeded_source(backfills=None))
    assert snap_compare(app, terminal_size=SIZE, run_before=drive("7"))


def test_backfills_pending_in_two_environments(snap_compare) -> None:
    app = _app(scenario(_nothing))
    assert snap_compare(app, terminal_size=SIZE, run_before=drive("7"))


def test_backfills_running_with_progress(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=drive("7", "down", "down"))


def test_backfills_running_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=drive("7", "down", "down"))


def test_backfills_failed(snap_compare) -> None:
    app = _app(scenario(_failed))
    assert snap_compare(app, terminal_size=SIZE, run_before=drive("7"))


def test_backfills_stalled(snap_compare) -> None:
    app = _app(scenario(_stalled, stalls=True))
    assert snap_compare(app, terminal_size=SIZE, run_before=drive("7", "down", "down", "down"))


def test_backfills_dry_run_confirm(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=drive("7", "d"))


def test_backfills_write_confirm_80x24(snap_compare, app: JobsConsole) -> None:
    """Staging from a production console: the dialog says the pass is recorded for staging."""
    assert snap_compare(app, terminal_size=SMALL, run_before=drive("7", "down", "w"))


def test_backfills_refused_start(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=drive("7", "down", "down", "w"))


def test_backfills_read_only(snap_compare, ro_app: JobsConsole) -> None:
    assert snap_compare(ro_app, terminal_size=SIZE, run_before=drive("7", "down", "down"))


# --- what each row says ------------------------------------------------------------------------------


async def test_i22_the_board_lists_each_backfill_per_environment_with_the_worlds_running_pass() -> None:
    source = seeded_source()
    board = await source.backfills()
    rows = {(v.name, v.environment): v for v in board.rows}
    assert list(rows) == [
        ("accounts_email_lower", "production"),
        ("accounts_email_lower", "staging"),
        ("accounts_plan_tier", "production"),
    ]
    assert {k: v.status for k, v in rows.items()} == {
        ("accounts_email_lower", "production"): "pending",  # a completed dry run applies nothing
        ("accounts_email_lower", "staging"): "pending",
        ("accounts_plan_tier", "production"): "running",
    }
    running = rows[("accounts_plan_tier", "production")]
    p = running.progress
    assert (p.swept, p.remaining, p.batches_per_second, p.eta_seconds) == (6000, 18000, 0.5, 180.0)
    assert running.gate.code == "X_BACKFILL_RUNNING" and running.gate.fix == f"jobsctl show {running.live_job_id}"
    assert [r.status for r in board.history[("accounts_plan_tier", "production")]] == ["running", "cancelled"]


async def _running_in_production(f: Factory, control: Callable[[str], BackfillControl]) -> None:
    p = await PassPlayer.start(f, control("alice"), "accounts_email_lower", write=True)
    await p.batches(2)


async def test_a_completed_dry_runs_progress_says_it_read_and_wrote_nothing() -> None:
    """A dry run sweeps every row and writes none: "0 remaining" under it read as nothing left to
    write, on a backfill still pending."""
    board = await seeded_source().backfills()
    rows = {(v.name, v.environment): v for v in board.rows}
    dry = rows[("accounts_email_lower", "production")]
    assert dry.last.dry_run and dry.last.status == "completed" and dry.status == "pending"
    text = progress_text(dry, NOW, console_env="production").plain
    assert "rows read, none written" in text and "remaining" not in text
    live = progress_text(rows[("accounts_plan_tier", "production")], NOW, console_env="production").plain
    assert "18,000 remaining" in live


async def test_i22_a_live_pass_is_running_only_in_its_own_environment() -> None:
    """One live pass per name holds for every environment: staging's row is pending, and a start
    there meets the running gate naming production's job."""
    board = await scenario(_running_in_production).backfills()
    rows = {(v.name, v.environment): v for v in board.rows}
    prod, staging = rows[("accounts_email_lower", "production")], rows[("accounts_email_lower", "staging")]
    assert (prod.status, staging.status) == ("running", "pending")
    assert staging.gate.code == "X_BACKFILL_RUNNING" and staging.gate.fix == f"jobsctl show {prod.live_job_id}"
    assert board.history.get(("accounts_email_lower", "staging")) is None


# --- actions and their effect on the ledger -------------------------------------------------------------


async def test_i22_a_dry_run_from_the_screen_writes_a_ledger_row_naming_the_console() -> None:
    app = _app(scenario(_nothing))
    async with app.run_test(size=SIZE) as pilot:
        await drive("7", "d")(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        text = str(app.screen.query_one("#confirm-text").render())
        assert "DRY RUN" in text and "in production" in text and "writes nothing" in text
        await drive("y")(pilot)
    [run] = await _ledger(app.source, "accounts_email_lower")
    assert (run.dry_run, run.forced, run.actor, run.status, run.environment) == (
        True,
        False,
        "console:test",
        "queued",
        "production",
    )
    assert any("Dry run pass of accounts_email_lower enqueued" in a.summary for a in app.activity)


async def test_i22_a_write_pass_on_the_staging_row_is_recorded_for_staging() -> None:
    app = _app(scenario(_nothing))
    async with app.run_test(size=SIZE) as pilot:
        await drive("7", "down", "w")(pilot)
        text = str(app.screen.query_one("#confirm-text").render())
        assert "WRITE" in text and "in staging" in text and "not this console's environment (production)" in text
        await drive("y")(pilot)
    assert await _ledger(app.source, "accounts_email_lower") == []
    [run] = await _ledger(app.source, "accounts_email_lower", "staging")
    assert (run.dry_run, run.environment, run.actor) == (False, "staging", "console:test")


async def test_i22_a_write_start_of_an_applied_backfill_shows_the_gate_and_force_reruns_it() -> None:
    app = _app(scenario(_applied))
    [done] = await _ledger(app.source, "accounts_email_lower")
    async with app.run_test(size=SIZE) as pilot:
        await drive("7", "w")(pilot)
        assert isinstance(app.screen, ResultScreen)  # refused before anything is asked
        text = str(app.screen.query_one("#result-text").render())
        assert "X_BACKFILL_APPLIED" in text and done.id in text
        assert "fix: f here forces a rerun (or: jobsctl backfill accounts_email_lower" in text  # this screen's key
        await drive("enter")(pilot)
        assert await _ledger(app.source, "accounts_email_lower") == [done]  # the gate left it as it was
        await drive("f")(pilot)
        text = str(app.screen.query_one("#confirm-text").render())
        assert "FORCE" in text and "NEW ledger row" in text
        await drive("y")(pilot)
    forced, old = await _ledger(app.source, "accounts_email_lower")
    assert (forced.forced, forced.dry_run, forced.status, forced.actor) == (True, False, "queued", "console:test")
    assert old == done  # a completed row is never edited
    assert any(not a.ok and "X_BACKFILL_APPLIED" in a.summary for a in app.activity)


async def test_i22_cancel_from_the_screen_cancels_the_pass_and_the_ledger_says_so() -> None:
    app = _app(seeded_source())
    async with app.run_test(size=SIZE) as pilot:
        await drive("7", "down", "down", "c")(pilot)
        text = str(app.screen.query_one("#confirm-text").render())
        assert "Cancel the running" in text and "(6,000 when this opened)" in text
        app.screen.query_one("#confirm-note").value = "INC-7: replica lag"  # type: ignore[attr-defined]
        await drive("y")(pilot)
    run = (await _ledger(app.source, "accounts_plan_tier"))[0]
    assert (run.status, run.error, run.swept, run.batches) == ("cancelled", "cancelled by console:test", 6000, 30)
    job = await app.source.engine.driver.job_get(job_id=run.job_id)
    assert job is not None and job.state is JobState.CANCELLED
    history = await app.source.engine.driver.job_history(job_id=run.job_id)
    assert [(h.kind, h.actor, h.note) for h in history][-1] == ("cancelled", "console:test", "INC-7: replica lag")


async def test_i22_retry_from_the_screen_continues_from_the_batch_the_pass_failed_on() -> None:
    app = _app(scenario(_failed))
    [failed] = await _ledger(app.source, "accounts_email_lower")
    assert (failed.status, failed.batches, failed.swept) == ("failed", 4, 2000)
    async with app.run_test(size=SIZE) as pilot:
        await drive("7", "x")(pilot)
        text = str(app.screen.query_one("#confirm-text").render())
        assert "from batch 5" in text
        await drive("y")(pilot)
    driver = app.source.engine.driver
    job = await driver.job_get(job_id=failed.job_id)
    assert job is not None and job.state is JobState.READY
    steps = {s.name: s for s in await driver.step_load(job_id=failed.job_id)}
    # The finished batches keep their cursors: a worker replays them and reads on from batch 5.
    assert [steps[f"batch-{n}"].status for n in range(1, 5)] == ["completed"] * 4
    assert steps["batch-4"].result == {"rows": 500, "cursor": 2000}
    assert [(h.kind, h.actor) for h in await driver.job_history(job_id=failed.job_id)][-1] == (
        "retried",
        "console:test",
    )
    assert (await _ledger(app.source, "accounts_email_lower")) == [failed]  # one row; its worker goes on counting


# --- read-only --------------------------------------------------------------------------------------------


async def test_read_only_offers_no_backfill_action_and_the_engine_refuses_them() -> None:
    source = scenario(_failed, read_only=True)
    app = _app(source)
    async with app.run_test(size=SIZE) as pilot:
        await drive("7", "d", "w", "f", "x", "c")(pilot)
        assert not isinstance(app.screen, (ConfirmScreen, ResultScreen))
        for action in ("dry_run", "write", "force", "retry_pass", "cancel_pass"):
            assert app.screen.check_action(action, ()) is False
    for call in (
        lambda: source.start_backfill("accounts_email_lower", "production"),
        lambda: source.retry_backfill("accounts_email_lower", "production"),
    ):
        with pytest.raises(JobsError) as info:
            await call()
        assert info.value.code == "X_READ_ONLY"
    # Past the console's own check, the engine's control refuses too.
    with pytest.raises(JobsError) as info:
        await source.backfill_door.control("production").start("accounts_email_lower")
    assert info.value.code == "X_READ_ONLY"
    [run] = await _ledger(source, "accounts_email_lower")
    assert run.status == "failed"


async def test_at_80_columns_the_title_names_the_app_and_an_applied_gate_names_the_key_that_forces() -> None:
    """The title ran past the edge, the app's name cut; the gate of an applied backfill named only
    the CLI's command, where this screen's own key is f."""
    app = _app(scenario(_applied))
    app.source.app = "myapp.billing.backfills"  # as `--app` names it
    async with app.run_test(size=SMALL) as pilot:
        await drive("7")(pilot)
        title = str(app.screen.query_one("#backfills-title").render())
        lines = title.split("\n")
        assert all(len(line) <= 78 for line in lines) and f"app {app.source.app}" in title, lines
        assert app.screen.query_one("#backfills-title").size.height == len(lines)  # every line on screen
        gate = str(app.screen.query_one("#bf-gate").render())
        assert "X_BACKFILL_APPLIED  fix: f here forces a rerun" in gate, gate
    ro = _app(scenario(_applied, read_only=True))
    async with ro.run_test(size=SMALL) as pilot:
        await drive("7")(pilot)
        assert "f here" not in str(ro.screen.query_one("#bf-gate").render())  # read-only offers no f
