"""A screen's line of key hints ("n: next page · /: filter · s: sort") breaks between two hints
at 80 columns, never inside one: the terminal's own wrap left "s:" at a line's end and "sort" on
the next."""

from __future__ import annotations

from console.app import JobsConsole
from console.demo.world import seeded_source
from console.format import packed
from tests.console.conftest import SIZE, SMALL, settle


def lines_of(app: JobsConsole, selector: str) -> list[str]:
    return str(app.screen.query_one(selector).content).split("\n")


def hints_whole(lines: list[str], width: int, hints: list[str]) -> None:
    assert all(len(line) <= width for line in lines), lines
    for hint in hints:
        assert any(hint in line for line in lines), (hint, lines)


def test_packed_breaks_only_between_parts() -> None:
    text = packed(["page 1", "50 shown of 827 matching", "n: next page", "/: filter", "s: sort"], 40)
    assert text.plain.split("\n") == ["page 1 · 50 shown of 827 matching", "n: next page · /: filter · s: sort"]
    assert packed(["a", "b"], 0).plain == "a · b"  # not laid out yet: one line


async def test_the_jobs_pager_breaks_between_hints_at_80_and_120_columns() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        for size in (SMALL, SIZE):
            await pilot.resize_terminal(*size)
            await settle(pilot)
            lines = lines_of(app, "#pager")
            hints_whole(lines, size[0] - 2, ["n: next page", "/: filter", "t: state", "s: sort", "Enter: open"])
        await pilot.resize_terminal(*SMALL)
        await settle(pilot)
        await pilot.press("t", "t", "t")  # dead jobs: x and d act on them
        await settle(pilot)
        await pilot.press("space", "space", "space")  # three marked: the longest pager there is
        await settle(pilot)
        hints_whole(lines_of(app, "#pager"), 78, ["3 marked (x d act on them; Esc clears)", "Enter: open"])


async def test_the_dead_letters_hints_break_between_hints_at_80_columns() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        detail = app.screen.query_one("#detail")
        lines = lines_of(app, "#detail")
        hints = lines[next(i for i, line in enumerate(lines) if line.startswith("Enter: ")) :]
        hints_whole(hints, 78, ["Enter: its jobs", "X/C/D: every group", "space: mark"])
        assert "space: mark" in detail.render_line(detail.size.height - 1).text  # the last line is on screen


async def test_the_filter_bar_s_placeholder_fits_the_bar_at_80_columns() -> None:
    """The Jobs bar's example ran past the edge: "..., or an" and the rest cut."""
    from console.widgets.filter_bar import FilterBar

    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        for key in ("2", "3"):
            await pilot.press(key, "slash")
            await settle(pilot)
            bar = app.screen.query_one(FilterBar)
            assert bar.placeholder.endswith("or an id/key") and len(bar.placeholder) <= bar.size.width, (
                bar.placeholder,
                bar.size.width,
            )
            await pilot.press("escape")
            await settle(pilot)


async def test_the_overview_s_legend_breaks_between_its_notes_on_a_narrow_terminal() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=(60, 20)) as pilot:
        await settle(pilot)
        hints_whole(lines_of(app, "#note"), 58, ["oldest: ! past 1m00s, !! past 5m00s", "y: why", "g: chart"])


async def test_the_backfills_hint_line_names_enter_which_opens_the_latest_pass_s_job() -> None:
    from console.screens.job_detail import JobDetailScreen

    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("7")
        await settle(pilot)
        screen = app.screen
        note = screen.query_one("#note")
        assert lines_of(app, "#note") == ["Enter: the latest pass's job"]
        assert note.region.height == 1 and note.region.bottom <= SMALL[1] - 1  # above the footer
        v = screen.selected()  # type: ignore[attr-defined]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, JobDetailScreen) and app.screen.job_id == v.last.job_id
