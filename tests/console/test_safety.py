"""Rendering data safely, no secrets on screen, the boundary contracts, and the lost database."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rich.text import Text

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.format import clean, pretty_json, redact_dsn, safe
from console.screens.base import MAX_BACKOFF
from console.widgets.keyed_table import KeyedTable
from tests.console.conftest import SIZE, outage_source, settle


def test_control_sequences_from_data_never_reach_the_terminal() -> None:
    hostile = "\x1b[2J\x1b]0;owned\x07\x9b31m\u202eevil\r\n"
    out = clean(hostile)
    assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F or c == "\u202e" for c in out)
    assert "\\x1b[2J" in out and "\\u202e" in out


def test_rich_markup_in_data_stays_literal() -> None:
    t = safe("[bold red]boom[/] [link=file:///etc/passwd]x[/link]")
    assert isinstance(t, Text) and t.plain == "[bold red]boom[/] [link=file:///etc/passwd]x[/link]"
    assert not t.spans


def test_huge_and_binary_input_is_bounded_and_escaped() -> None:
    body, folded = pretty_json({"blob": "".join(chr(i % 256) for i in range(200_000)), "rows": list(range(500))})
    assert len(body.plain) < 25_000
    assert folded > 0
    assert "\x00" not in body.plain and "\x1b" not in body.plain


def test_dsn_password_is_redacted_in_both_forms() -> None:
    assert redact_dsn("postgresql://app:s3cret@db/app") == "postgresql://app:***@db/app"
    assert "s3cret" not in redact_dsn("host=db user=app password=s3cret dbname=app")


def test_the_console_imports_neither_psycopg_nor_the_postgres_driver() -> None:
    root = Path(__file__).resolve().parents[2]
    res = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports")],
        cwd=root,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert "nothing in the console imports engine.drivers, psycopg or psycopg_pool KEPT" in res.stdout
    assert "the console reaches the engine only through console.source and the public types KEPT" in res.stdout
    assert "the console proper never imports its demo; only console.cli starts it KEPT" in res.stdout


async def test_hostile_input_renders_escaped_on_the_detail_screen() -> None:
    from console.screens.job_detail import JobDetailScreen
    from engine.projections import JobFilter

    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        page = await app.source.jobs(JobFilter(input_fields=(("to", "eve@example.com"),)))
        await app.push_screen(JobDetailScreen(page.items[0].id))
        await settle(pilot)
        shown = str(app.screen.query_one("#input").render())
        assert "\x1b" not in shown and "\\u001b[2J" in shown and "[bold red]markup[/]" in shown


async def test_refresh_updates_rows_in_place_keeping_cursor_and_scroll() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=(120, 20)) as pilot:
        await pilot.press("2")
        await settle(pilot)
        table = app.screen.query_one(KeyedTable)
        for _ in range(25):
            await pilot.press("down")
        await settle(pilot)
        row, key, scroll = table.cursor_row, table.selected_key, table.scroll_y
        assert scroll > 0
        await pilot.press("r")
        await settle(pilot)
        assert (table.cursor_row, table.selected_key, table.scroll_y) == (row, key, scroll)


async def test_a_new_row_on_top_keeps_the_cursor_on_its_job() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await settle(pilot)
        table = app.screen.query_one(KeyedTable)
        await pilot.press("down", "down")
        key = table.selected_key
        from engine.testing import make_job

        await make_job(app.source.engine.driver, app.source.engine.ids, app.source.now(), queue="emails")
        await pilot.press("r")
        await settle(pilot)
        assert table.selected_key == key and table.cursor_row == 3


async def test_database_down_shows_a_banner_backs_off_and_recovers() -> None:
    source, outage = outage_source()
    app = JobsConsole(source, refresh=2)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        banner = app.screen.query_one("#banner")
        assert not banner.display
        outage.down = True
        await pilot.press("r")
        await settle(pilot)
        assert banner.display and "database unreachable" in str(banner.render())
        first = app.db_error[2]
        await pilot.press("r")
        await settle(pilot)
        assert first < app.db_error[2] <= MAX_BACKOFF  # backs off, never crashes, retries often
        assert "DISCONNECTED" in str(app.screen.query_one("#status").render())
        await pilot.press("2")  # another screen while down: still no crash
        await settle(pilot)
        outage.down = False
        await pilot.press("r")
        await settle(pilot)
        assert app.db_error is None and not app.screen.query_one("#banner").display
        assert app.screen.query_one(KeyedTable).keys


async def test_an_action_while_the_database_is_down_is_reported_not_crashed() -> None:
    source, outage = outage_source()
    app = JobsConsole(source, refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "p")
        await settle(pilot)
        outage.down = True
        await pilot.press("y")
        await settle(pilot)
        assert any("may not have landed" in (n.title or "") for n in app._notifications)
        assert app.is_running
