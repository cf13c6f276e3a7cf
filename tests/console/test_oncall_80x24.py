"""What a first-time on-call sees at 80x24 (and 60x20), read off the screen as drawn: the keys the
footer offers are the ones that can act, the palette marks the letters typed, the columns that
tell rows apart are whole, and times are said in the engine's one wording."""

from __future__ import annotations

from rich.segment import Segment
from textual.app import App
from textual.screen import ModalScreen

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.widgets.keyed_table import KeyedTable
from engine.durations import relative
from tests.console.conftest import SMALL, drive, settle
from tests.console.test_footer_fit import footer_keys


def drawn(app: App[None]) -> list[list[Segment]]:
    """The screen as drawn (the palette or a modal over what is under it), one list of segments a row."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    return [[seg for strip in line for seg in strip] for line in update.strips]  # type: ignore[attr-defined]


def rows(app: App[None]) -> list[str]:
    return ["".join(seg.text for seg in line) for line in drawn(app)]


def said(app: App[None]) -> str:
    """The screen's words, its lines joined as a reader reads a wrapped line on."""
    return " ".join(" ".join(r.split()) for r in rows(app))


async def test_the_palette_open_on_a_root_screen_offers_no_back_key() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await drive("2", "ctrl+p")(pilot)
        keys, _ = footer_keys(app)
        assert "esc Back" not in keys, keys  # Escape closes the palette; there is no screen to go back to
        await drive("escape", "1", "enter", "ctrl+p")(pilot)  # Jobs of a queue, over the Overview
        keys, _ = footer_keys(app)
        assert "esc Back" in keys, keys


async def test_the_palette_highlights_the_letters_typed_after_an_escaped_bracket() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await drive("2", "ctrl+p", "a", "x")(pilot)
        line = next(line for line in drawn(app) if "Retry all  [X]" in "".join(s.text for s in line))
        marked = "".join(seg.text for seg in line if seg.style is not None and seg.style.underline)
        assert marked == "aX"  # the "a" of "all" and the key's X, not the bracket after it


def offered_on(app: App[None]) -> set[str]:
    keys, _ = footer_keys(app)
    return {k for k in keys if k in ("x Retry", "c Cancel", "f Force rerun")}


async def test_backfills_offer_retry_and_cancel_only_on_rows_they_can_act_on() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await drive("7")(pilot)
        screen = app.screen
        seen: dict[str, set[str]] = {}
        for _ in range(screen.query_one("#backfills", KeyedTable).row_count):
            v = screen.selected()  # type: ignore[attr-defined]
            seen[f"{v.status}, last pass {v.last.status if v.last else None}"] = offered_on(app)
            await drive("down")(pilot)
        assert seen == {
            "pending, last pass completed": set(),
            "pending, last pass None": set(),
            "running, last pass running": {"c Cancel"},
        }
        while screen.selected().status != "running":  # type: ignore[attr-defined]
            await drive("up")(pilot)
        await drive("c", "y")(pilot)  # the running pass cancelled: x continues it, c has nothing to cancel
        assert screen.selected().last.status == "cancelled"  # type: ignore[attr-defined]
        assert offered_on(app) == {"x Retry"}


async def test_backfills_offer_a_forced_rerun_only_of_an_applied_backfill() -> None:
    from tests.console.test_backfills_screen import _app, _applied, scenario

    app = _app(scenario(_applied))
    async with app.run_test(size=SMALL) as pilot:
        await drive("7")(pilot)
        assert app.screen.selected().applied is not None  # type: ignore[attr-defined]
        assert offered_on(app) == {"f Force rerun"}
        await drive("down")(pilot)  # the same backfill in staging, never applied there
        assert app.screen.selected().applied is None  # type: ignore[attr-defined]
        assert offered_on(app) == set()


async def test_times_are_said_in_the_engines_wording_a_fresh_heartbeat_under_a_second_ago() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await drive("4")(pilot)
        view = app.screen.view  # type: ignore[attr-defined]
        fresh = next(w for w in view.workers if w.heartbeat_age == 0)
        stale = next(w for w in view.workers if w.stale)
        screen = rows(app)
        row = next(r for r in screen if r.startswith(f" {fresh.id} "))
        assert "under a second ago" in row, row  # as `jobsctl workers` and the why texts say it, never "now"
        row = next(r for r in screen if r.startswith(f" {stale.id} "))
        assert relative(-stale.heartbeat_age) in row, row


async def test_the_database_down_banner_says_when_it_retries_in_the_engines_wording() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        app.db_error = ("Database unreachable", "connection refused", 0.5)
        await settle(pilot)
        assert "retrying in under a second (r: now)" in said(app), said(app)  # not "in 0s"
        app.db_error = ("Database unreachable", "connection refused", 4.0)
        await settle(pilot)
        assert f"retrying {relative(4.0)} (r: now)" in said(app), said(app)


async def test_at_80_columns_schedules_show_every_cron_whole() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await drive("5", "p", "y")(pilot)  # a paused task's status is the widest
        screen = rows(app)
        for t in app.screen._view.tasks:  # type: ignore[attr-defined]
            row = next(r for r in screen if r.startswith(f" {t.name} "))
            assert f" {t.cron} " in row, row


async def test_at_80_columns_the_jobs_tenant_column_is_whole_beside_the_scrollbar() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        # All of them, then the dead ones: the columns sized to the wider page before are sized again.
        for path in (("2",), ("slash", *"state=dead", "enter")):
            await drive(*path)(pilot)
            if path == ("2",):
                assert app.screen.query_one("#jobs", KeyedTable).show_vertical_scrollbar
            jobs = app.screen.rows  # type: ignore[attr-defined]
            shown = {r[1:13]: r for r in rows(app)}
            on_screen = [j for j in jobs.values() if j.id[-12:] in shown]
            assert len(on_screen) > 3
            for j in on_screen:
                assert f"  {j.tenant or '—'} " in shown[j.id[-12:]], shown[j.id[-12:]]


async def test_at_60x20_dead_letters_show_each_groups_count() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=(60, 20)) as pilot:
        await drive("3")(pilot)
        screen = rows(app)
        assert "count" in next(r for r in screen if "job name" in r)
        for g in app.screen.groups.values():  # type: ignore[attr-defined]
            row = next(r for r in screen if r.startswith(f" {g.name} ") and f" {g.error_code} " in r)
            assert row.split()[2] == f"{g.count:,}", row


async def test_at_60x20_a_confirms_options_and_group_table_are_whole() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=(60, 20)) as pilot:
        await drive("3", "x")(pilot)
        text = " ".join(" ".join(r.strip("█▐ ").split()) for r in rows(app))  # the box's lines, read on
        assert "pace it: at most 10 jobs a second, with a pause between batches" in text, text
        header = next(r for r in rows(app) if "stop reason" in r)
        assert header.split("█")[1].split() == ["count", "stop", "reason", "error", "code", "tenant"], header


async def test_keys_typed_behind_q_open_nothing_as_the_console_quits() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        app.exit()  # q, as the demo takes its time to stop: the keys typed behind it arrive meanwhile
        app.action_activity()
        app.action_help()
        app.action_goto("dead_letters")
        await pilot.pause()
    assert app.return_code == 0  # quit cleanly: no screen opened on the way out crashed it


async def test_a_group_discard_says_each_job_goes_with_its_own_attempts() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await drive("3", "down", "d")(pilot)  # charge_card's X_CARD_DECLINED group: several jobs
        text = " ".join(" ".join(r.strip("█▐ ").split()) for r in rows(app))
        assert "would be discarded (each deleted; its attempts and steps go with it;" in text, text


async def test_at_80_columns_each_workers_host_and_pid_are_whole_on_its_line_under_the_table() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await drive("4")(pilot)
        table = app.screen.query_one("#workers", KeyedTable)
        for w in sorted(app.screen.view.workers, key=lambda w: table.keys.index(w.id)):  # type: ignore[attr-defined]
            assert table.selected_key == w.id
            assert any(r.startswith(f" {w.id}  {w.host} pid {w.pid}, started ") for r in rows(app)), rows(app)
            await drive("down")(pilot)


def jobs_offers(app: JobsConsole) -> set[str]:
    """The Jobs screen's row and bulk actions as the footer draws them and the palette lists them."""
    keys, _ = footer_keys(app)
    listed = {c.title.replace("\\[", "[") for c in app.get_system_commands(app.screen)}
    wanted = {"x Retry", "c Cancel", "d Discard"}
    return {k for k in keys if k in wanted} | {
        t
        for t in listed
        if t.split("  ")[0] in ("Retry", "Cancel", "Discard", "Retry all", "Cancel all", "Discard all")
    }


async def test_jobs_offer_retry_and_discard_only_where_a_dead_job_is_selected_or_marked() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await drive("2", "t", "t", "t", "t")(pilot)  # state=running
        screen = app.screen
        assert str(screen.where.state) == "running"  # type: ignore[attr-defined]
        assert jobs_offers(app) == {"c Cancel", "Cancel  [c]", "Cancel all  [C]"}
        await drive("x", "d", "X", "D")(pilot)  # none of them opens a confirmation on running jobs
        assert not isinstance(app.screen, ModalScreen)
        await drive("t", "t", "t")(pilot)  # delayed, ready, then every state: a dead row and a live one
        table = screen.query_one("#jobs", KeyedTable)
        rows = screen.rows  # type: ignore[attr-defined]
        dead = next(i for i, k in enumerate(table.keys) if rows[k].state.value == "dead")
        live = next(i for i, k in enumerate(table.keys) if rows[k].state.value == "running")
        table.move_cursor(row=dead)
        await settle(pilot)
        assert {"x Retry", "Retry  [x]", "Discard  [d]"} <= jobs_offers(app)
        assert "Cancel  [c]" not in jobs_offers(app)
        table.move_cursor(row=live)
        await settle(pilot)
        assert {"c Cancel", "Cancel  [c]"} <= jobs_offers(app)
        assert not {"x Retry", "Retry  [x]", "Discard  [d]"} & jobs_offers(app)
        await drive("space")(pilot)  # a running job marked, the cursor on to the next row
        table.move_cursor(row=dead)
        await settle(pilot)
        assert "Retry  [x]" not in jobs_offers(app)  # x acts on the marks: none of them is dead
