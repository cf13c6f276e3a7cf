"""The help screen opens on the keys of the screen it was asked from, and names every key's title
whole at 80 columns."""

from __future__ import annotations

import io

from rich.console import Console
from textual.widgets import Static

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.screens.help import HelpScreen
from tests.console.conftest import SMALL, settle


def shown(app: JobsConsole) -> list[str]:
    """The help's lines as an 80-column terminal shows them."""
    out = Console(width=78, record=True, file=io.StringIO())
    out.print(app.screen.query_one("#help-table", Static).content)
    return out.export_text().splitlines()


async def test_help_asked_on_a_screen_lists_that_screen_s_keys_first() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        for key, section in (("3", "Dead letters"), ("6", "Outbox"), ("5", "Schedules")):
            await pilot.press(key, "question_mark")
            await settle(pilot)
            assert isinstance(app.screen, HelpScreen)
            lines = shown(app)
            assert lines[0].startswith(f"{section}  (this screen)"), lines[:3]
            assert any(line.startswith("Everywhere") for line in lines)  # the rest still follow
            await pilot.press("escape")
            await settle(pilot)


async def test_help_names_every_key_s_title_whole_at_80_columns() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        text = "\n".join(shown(app))
        assert "…" not in text
        for title in ("Retry with children", "Cancel with children"):
            assert title in text
