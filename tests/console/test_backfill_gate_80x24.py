"""The Backfills gate panel at 80x24: a refusal shows its code and fix first, always, and then its
cause, wrapped onto at most three lines; a longer cause scrolls within them (never cut unseen,
never pushing the ledger off the screen)."""

from __future__ import annotations

import dataclasses

import pytest
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.widget import Widget

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.screens.backfills import BackfillsScreen
from console.source import Source
from console.widgets.keyed_table import KeyedTable
from tests.console.conftest import SMALL, settle
from tests.console.test_oncall_80x24 import rows

LONG_CAUSE = (
    "backfill 'accounts_plan_tier' already has a live pass running as 019b796c-eba0-70ef-ac4b-8778d2a0169d, "
    "and one name holds one live pass; its step trace names the batch it is on, the worker that holds it "
    "and when its lease ends; a second pass would sweep the same rows twice and race the first on each batch"
)


def lines_of(widget: Widget, height: int) -> list[str]:
    """``widget``'s lines as drawn over ``height`` rows, its border and padding stripped."""
    return [s.text.lstrip("█▌▐ ").strip() for s in widget.render_lines(Region(0, 0, widget.outer_size.width, height))]


def words(lines: list[str]) -> str:
    return " ".join(" ".join(lines).split())


def with_cause(source: Source, cause: str) -> Source:
    """``source`` whose backfill gates give ``cause`` (a refusal as long as the engine may word one)."""
    board = source.backfills

    async def backfills():  # type: ignore[no-untyped-def]
        b = await board()
        gated = [dataclasses.replace(v, gate=dataclasses.replace(v.gate, cause=cause)) if v.gate else v for v in b.rows]
        return dataclasses.replace(b, rows=gated)

    source.backfills = backfills  # type: ignore[method-assign]
    return source


async def on_the_refused_row(pilot) -> BackfillsScreen:  # type: ignore[no-untyped-def]
    await settle(pilot)
    await pilot.press("7")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, BackfillsScreen)
    for _ in range(screen.query_one("#backfills", KeyedTable).row_count):
        v = screen.selected()
        if v is not None and v.gate is not None:
            break
        await pilot.press("down")
        await settle(pilot)
    v = screen.selected()
    assert v is not None and v.gate is not None, "the seeded world has a refused row"
    return screen


@pytest.mark.asyncio
async def test_a_refusals_cause_is_shown_whole_under_its_code_and_fix_at_80x24() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        screen = await on_the_refused_row(pilot)
        v = screen.selected()
        head = screen.query_one("#bf-gate")
        shown = lines_of(head, head.outer_size.height)
        assert shown[0].startswith(f"A write pass is refused now: {v.gate.code}  fix: ")
        assert " ".join(v.gate.fix.split()) in words(shown)  # the fix, first
        assert screen.query_one("#bf-cause", VerticalScroll).max_scroll_y == 0  # nothing to scroll
        panel = [r.strip()[2:] for r in rows(app) if r.strip().startswith("█ ")]
        assert words(panel).endswith(" ".join(v.gate.cause.split())), panel  # then the whole cause
        history = screen.query_one("#bf-history", KeyedTable)
        assert history.size.height >= 2, "the ledger keeps its header and newest pass"


@pytest.mark.asyncio
async def test_a_long_refusal_keeps_its_code_and_fix_and_scrolls_its_cause_within_three_lines() -> None:
    app = JobsConsole(with_cause(seeded_source(), LONG_CAUSE), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        screen = await on_the_refused_row(pilot)
        v = screen.selected()
        drawn = rows(app)
        panel = [r.strip()[2:] for r in drawn if r.strip().startswith("█ ")]
        assert panel[0].startswith(f"A write pass is refused now: {v.gate.code}  fix: "), panel
        assert " ".join(v.gate.fix.split()) in words(panel[:2])
        assert len(panel) <= 5, panel  # the code and fix (two lines), then three of the cause
        assert drawn[-1].lstrip().startswith("? "), "the footer stays the bottom row"
        history = screen.query_one("#bf-history", KeyedTable)
        assert history.size.height >= 2, "the ledger keeps its header and newest pass"
        cause = screen.query_one("#bf-cause", VerticalScroll)
        assert cause.max_scroll_y > 0  # the rest is there, a scroll away
        cause.scroll_end(animate=False, immediate=True)
        await settle(pilot)
        assert words([r.strip()[2:] for r in rows(app) if r.strip().startswith("█ ")]).endswith("on each batch")
