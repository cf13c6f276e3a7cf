"""The Backfills gate panel at 80x24: a refusal shows its code and fix first and then its cause
whole, wrapped onto the panel's lines, never cut mid-sentence."""

from __future__ import annotations

import pytest
from textual.geometry import Region
from textual.widgets import Static

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.screens.backfills import BackfillsScreen
from console.widgets.keyed_table import KeyedTable
from tests.console.conftest import SMALL, settle


@pytest.mark.asyncio
async def test_a_refusals_cause_is_shown_whole_under_its_code_and_fix_at_80x24() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("7")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, BackfillsScreen)
        table = screen.query_one("#backfills", KeyedTable)
        for _ in range(table.row_count):  # to the row whose write pass is refused
            v = screen.selected()
            if v is not None and v.gate is not None:
                break
            await pilot.press("down")
            await settle(pilot)
        v = screen.selected()
        assert v is not None and v.gate is not None, "the seeded world has a refused row"
        gate = screen.query_one("#bf-gate", Static)
        shown = [s.text.lstrip("█▌▐ ").strip() for s in gate.render_lines(Region(0, 0, *gate.outer_size))]
        assert shown[0].startswith(f"A write pass is refused now: {v.gate.code}  fix: ")
        words = " ".join(" ".join(shown).split())
        assert " ".join(v.gate.fix.split()) in words  # the fix, first
        assert words.endswith(" ".join(v.gate.cause.split())), shown  # then the whole cause
        history = screen.query_one("#bf-history", KeyedTable)
        assert history.size.height >= 2, "the ledger keeps its header and newest pass"
