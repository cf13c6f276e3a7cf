"""The Outbox screen (key 6): snapshots for empty, busy (a capped backlog under two live claims),
failing (the demo's world: a row failing at every pass, rows queued behind it, a live claim),
read-only and 80x24; Pilot checks of the why (the engine's own sentence for the selected row), the
age trend kept across refreshes, and navigation (6 from every screen goes to its root, the palette
entry). The world's checkouts: a rolled-back stage never appears."""

from __future__ import annotations

import asyncio
import itertools
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from textual.pilot import Pilot

from console.app import JobsConsole
from console.demo.outbox import RELAYS, checkouts
from console.demo.world import NOW, seeded_engine, seeded_source
from console.screens.outbox import OutboxScreen, Sample, trend_text
from console.source import Source
from console.widgets.keyed_table import KeyedTable
from engine.introspect.base import EngineView
from engine.introspect.outbox import ALIVE_WINDOW, outbox_why
from engine.projections import JobFilter
from engine.testing import Factory
from tests.console.conftest import SIZE, SMALL, drive, settle

BUSY_ROWS = 12_500


def ticks(*seconds: float):  # type: ignore[no-untyped-def]
    """Then: the world's clock moves on, and the screen refreshes, once per value."""

    async def then(pilot: Pilot) -> None:
        for s in seconds:
            pilot.app.source.engine.clock.advance(s)  # type: ignore[attr-defined]
            await pilot.press("r")
            await settle(pilot)

    return then


def busy_source() -> Source:
    """No failure: 12,500 receipts staged over ten minutes, two relays publishing 2,000 of them,
    then each holding a batch under its lease: a backlog past the count cap."""
    from console.demo.jobs import send_receipt
    from engine import Enqueue

    engine = seeded_engine(empty=True)
    f = Factory.of(engine)

    async def play() -> None:
        engine.clock.set(NOW - timedelta(minutes=10))  # type: ignore[attr-defined]
        for batch in range(5):
            async with f.app_transaction() as tx:
                first = batch * 2_500
                await f.stage(
                    tx,
                    *(
                        Enqueue(send_receipt, {"order": f"ord-{n}", "email": "a@b.c"})
                        for n in range(first, first + 2_500)
                    ),
                )
            for r in RELAYS:
                await f.relay(r, batch_size=200).run_once()
            f.advance(110)
        engine.clock.set(NOW - timedelta(seconds=2))  # type: ignore[attr-defined]
        for r in RELAYS:
            await f.relay_claim(r, limit=250)
        engine.clock.set(NOW)  # type: ignore[attr-defined]

    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, play()).result()
    return Source(engine, actor="console:test", database="memory (seeded demo)", driver="memory")


def why(app: JobsConsole) -> str:
    return str(app.screen.query_one("#outbox-why").render())


# --- snapshots ----------------------------------------------------------------------------------


def test_outbox_empty(snap_compare, empty_app: JobsConsole) -> None:
    assert snap_compare(empty_app, terminal_size=SIZE, run_before=drive("6"))


def test_outbox_busy(snap_compare) -> None:
    app = JobsConsole(busy_source(), refresh=60)
    assert snap_compare(app, terminal_size=SIZE, run_before=drive("6", then=ticks(2, 2, 2)))


def test_outbox_failing(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=drive("6", then=ticks(2, 2, 2, 2)))


def test_outbox_read_only(snap_compare, ro_app: JobsConsole) -> None:
    assert snap_compare(ro_app, terminal_size=SIZE, run_before=drive("6", "end"))


def test_outbox_80x24(snap_compare, app: JobsConsole) -> None:
    assert snap_compare(app, terminal_size=SMALL, run_before=drive("6", "down"))


# --- behaviour --------------------------------------------------------------------------------


async def test_the_why_under_the_table_is_the_engines_sentence_for_the_selected_row() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    view = EngineView(app.source.engine)
    async with app.run_test(size=SIZE) as pilot:
        await drive("6")(pilot)
        table = app.screen.query_one("#outbox", KeyedTable)
        texts = []
        for i, key in enumerate(table.keys):
            if i:
                await drive("down")(pilot)
            assert table.selected_key == key
            sentence = (await outbox_why(view, key)).text
            assert why(app).startswith(f"Why is row {key} not published?") and sentence in why(app)
            texts.append(sentence)
    failing, *waiting, held = texts
    assert failing.startswith("its publish failed 27 time(s)") and "QueryCanceled" in failing
    assert waiting and all(t.startswith(f"behind row {table.keys[0]}, whose publish has failed 27") for t in waiting)
    assert held.startswith(f"held by {RELAYS[1]} until 2026-01-01 12:00:27")


async def test_once_the_relays_stop_beating_the_screen_says_no_relay_is_alive() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await drive("6", then=ticks(ALIVE_WINDOW + 30))(pilot)
        assert "No relay is alive" in str(app.screen.query_one("#outbox-relays").render())
        assert "no relay is alive" in why(app)  # the failing row: nothing retries it
        await drive("end")(pilot)  # app2's claim: its lease lapsed
        assert f"{RELAYS[1]} held it until 2026-01-01 12:00:27 and its lease lapsed" in why(app)


async def test_the_age_trend_is_kept_across_refreshes_that_find_the_clock_moved() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await drive("6", "r", "r")(pilot)
        screen = app.screen
        assert isinstance(screen, OutboxScreen) and len(screen.samples) == 1  # the same moment read again
        assert "one sample so far" in str(screen.query_one("#outbox-trend").render())
        await ticks(3, 3)(pilot)
        assert [s.age for s in screen.samples] == [161.5, 164.5, 167.5]
        trend = str(screen.query_one("#outbox-trend").render())
        assert "▁▅█  2m41s → 2m47s over 6s: rising" in trend and "(backlog 5 → 5)" in trend
        await drive("1", "6")(pilot)  # kept while the console runs: the mode's screen stays
        assert len(screen.samples) == 3 and app.screen is screen


def test_the_trend_says_when_the_backlog_drained_and_when_nothing_waited() -> None:
    drained = [
        Sample(NOW, 11.0, 1),
        Sample(NOW + timedelta(seconds=20), 14.0, 1),
        Sample(NOW + timedelta(seconds=28), 0, 0),
    ]
    assert "11s → none waiting over 28s: falling  (backlog 1 → 0)" in str(trend_text(drained))
    idle = [Sample(NOW, 0.0, 0), Sample(NOW + timedelta(seconds=80), 0.0, 0)]
    assert str(trend_text(idle)) == "Age trend nothing waited at any refresh over 1m20s"


PATHS = {
    "overview": (),
    "jobs": ("2",),
    "job_detail": ("2", "enter"),
    "why": ("2", "y"),
    "dead_letters": ("3",),
    "workers": ("4",),
    "schedules": ("5",),
    "outbox": ("6",),
    "help": ("question_mark",),
    "activity": ("a",),
}


@pytest.mark.parametrize("start", list(PATHS))
async def test_6_goes_to_the_outbox_root_from_every_screen(start: str) -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await drive(*PATHS[start], "6")(pilot)
        assert isinstance(app.screen, OutboxScreen) and len(app.screen_stack) == 1
        assert app.current_mode == "outbox" and "6 Outbox ◂" in str(app.screen.query_one("#nav").render())


async def test_the_palette_entry_opens_the_outbox() -> None:
    app = JobsConsole(seeded_source(read_only=True), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        cmd = next(c for c in app.get_system_commands(app.screen) if c.title.startswith("Outbox"))
        assert "[6]" in cmd.title
        await cmd.callback()
        await settle(pilot)
        assert isinstance(app.screen, OutboxScreen)


async def test_a_rolled_back_checkout_never_appears_and_every_committed_one_does() -> None:
    source = seeded_source()
    view, rows = await source.outbox()
    jobs = await source.jobs(JobFilter(name="send_receipt"), limit=500)
    keys = {w.row.idempotency_key for w in rows} | {j.idempotency_key for j in jobs.items}
    shop = {k.removeprefix("receipt:") for k in keys if k.startswith("receipt:ord-5")}
    last = max(int(o[4:]) for o in shop)
    played = list(itertools.takewhile(lambda c: int(c.order[4:]) <= last, checkouts(7)))
    assert any(not c.commit for c in played) and view.published_last_hour > 20
    assert not {c.order for c in played if not c.commit} & shop  # rolled back: no row, no job
    assert {c.order for c in played if c.commit} == shop  # committed: an outbox row or its job
