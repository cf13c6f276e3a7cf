"""The demo's DSN, readable while its console covers the line printed before it opened: the
Overview and the help say the whole `JOBS_DSN=... jobsctl queues` line at 80 columns, broken only
between the DSN's keys, and `jobs-console demo` hands the console its server's DSN."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from console import cli
from console.app import JobsConsole
from console.demo.world import seeded_source
from tests.console.conftest import SMALL, settle

DSN = "host=/dev/shm/jobs-pg-6xg33bx7 port=5432 user=postgres dbname=postgres"
COMMAND = f"JOBS_DSN='{DSN}' jobsctl queues"


def _said(app: JobsConsole, selector: str) -> list[str]:
    return str(app.screen.query_one(selector).render()).split("\n")


async def test_the_overview_and_the_help_show_the_demo_s_whole_dsn_for_another_terminal_at_80_columns() -> None:
    app = JobsConsole(seeded_source(), refresh=60, cli_dsn=DSN)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        lines = _said(app, "#elsewhere")
        assert all(len(line) <= SMALL[0] - 2 for line in lines), lines
        assert " ".join(lines) == f"another terminal: {COMMAND}", lines
        assert "host=/dev/shm/jobs-pg-6xg33bx7" in lines[0]  # a line breaks between two keys, never in one
        shown = app.screen.query_one("#elsewhere").region
        assert shown.height == len(lines) and shown.bottom <= SMALL[1] - 1  # on screen, above the footer
        await pilot.press("question_mark")
        await settle(pilot)
        table = app.screen.query_one("#help-table")
        top = [table.render_line(y).text.strip() for y in range(3)]
        assert " ".join(top).strip() == f"another terminal: {COMMAND}", top  # first, whole


async def test_a_console_without_a_dsn_to_hand_out_shows_no_such_line() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        assert not app.screen.query_one("#elsewhere").display


def test_jobs_console_demo_hands_its_server_s_dsn_to_the_console(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[Any] = []

    class Running:  # what Demo(...).start() answers, without starting a server
        dsn = DSN

        def __init__(self, **_: Any) -> None:
            pass

        def start(self) -> Running:
            return self

        def announce(self) -> str:
            return f"jobs-console demo: PostgreSQL at {DSN!r}"

        def run(self, make_app: Any) -> None:
            built.append(make_app(seeded_source()))

        def stop(self) -> None:
            pass

    monkeypatch.setattr("console.demo.app.Demo", Running)
    result = CliRunner().invoke(cli.app, ["demo"])
    assert result.exit_code == 0, result.output
    assert built and built[0].cli_dsn == DSN
