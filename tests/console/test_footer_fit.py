"""At 80 columns every screen's footer shows whole keys only: every key the screen offers, or the
ones the operator needs most there, with the help key always shown and reading "More keys" when
any is left out (the help screen and the palette list them). Asserted on the footer as drawn:
the screen's bottom row."""

from __future__ import annotations

import pytest

from console.app import JobsConsole
from console.demo.world import seeded_source
from tests.console.conftest import SIZE, SMALL, drive, settle

EVERY = frozenset[str]()  # the footer must show every key the screen offers
DEAD_WITH_STEPS = ("2", "slash", *"name=send_receipt", "enter", "enter")
SUSPENDED_ON_EVENT = ("2", "slash", *"search=user:8", "enter", "enter")

# path -> the keys the footer must show at 80 columns (EVERY: all of them)
SCREENS: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {
    "overview": ((), EVERY),
    # x, c and d only where the selected (or a marked) row can take them: the newest job is live
    "jobs": (("2",), frozenset({"/ Filter", "y Why", "c Cancel", "l Logs"})),
    "jobs, dead": (("2", "t", "t", "t"), frozenset({"/ Filter", "y Why", "x Retry", "l Logs"})),
    "jobs, second page": (("2", "n"), frozenset({"/ Filter", "y Why", "l Logs"})),
    "jobs, a row marked": (("2", "space"), frozenset({"esc Back", "/ Filter", "y Why", "c Cancel"})),
    "jobs of a queue": (("enter",), frozenset({"esc Back", "/ Filter", "y Why", "c Cancel"})),
    "dead letters": (("3",), frozenset({"/ Filter", "x Retry group", "d Discard group"})),
    "workers": (("4",), EVERY),
    "schedules": (("5",), EVERY),
    "outbox": (("6",), EVERY),
    "backfills": (("7",), EVERY),  # x and c only on a row they can act on (the first has no pass to act on)
    "backfills, a running pass": (("7", "end"), frozenset({"c Cancel"})),
    "job detail, dead with steps": (DEAD_WITH_STEPS, frozenset({"esc Back", "y Why", "x Retry", "l Logs"})),
    "job detail, suspended on an event": (SUSPENDED_ON_EVENT, EVERY),
    "why": (("2", "y"), EVERY),
    "chart": (("g",), EVERY),
    "logs": (("l",), EVERY),
    "activity": (("a",), EVERY),
    "help": (("question_mark",), EVERY),
}


def footer_keys(app: JobsConsole) -> tuple[list[str], str]:
    """The footer as drawn, cut into its keys (a key reads "k Description"; two spaces part them),
    and what is drawn right of the divider (the palette key)."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    row = "".join(seg.text for strip in update.strips[-1] for seg in strip)  # type: ignore[attr-defined]
    assert len(row) == app.size.width
    left, divider, right = row.partition("▏")
    assert divider, f"no palette key on the footer: {row!r}"
    return [k for k in left.strip().split("  ") if k], right.strip()


def offered(app: JobsConsole) -> set[str]:
    """Every key the screen binds for its footer, as the footer labels it."""
    return {
        f"{app.get_key_display(b.binding)} {b.binding.description}"
        for b in app.screen.active_bindings.values()
        if b.binding.show
    }


def assert_whole_keys_and_help(app: JobsConsole) -> list[str]:
    keys, palette = footer_keys(app)
    every = offered(app)
    assert palette == "^p palette"
    assert not set(keys) - every - {"? More keys"}, f"a key cut or unknown: {keys}"  # nothing cut in half
    left_out = every - set(keys)
    assert keys[0] == ("? More keys" if left_out - {"? Help"} else "? Help"), keys
    return keys


@pytest.mark.parametrize("screen", list(SCREENS))
async def test_at_80_columns_every_footer_shows_whole_keys_and_the_help_key(screen: str) -> None:
    path, needed = SCREENS[screen]
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await drive(*path)(pilot)
        keys = assert_whole_keys_and_help(app)
        if needed is EVERY:
            assert set(keys) == offered(app), keys
        else:
            assert needed <= set(keys), keys


@pytest.mark.parametrize("path", [("2", "n"), ("3",), DEAD_WITH_STEPS])
async def test_read_only_footers_fit_80_columns_too(path: tuple[str, ...]) -> None:
    app = JobsConsole(seeded_source(read_only=True), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await drive(*path)(pilot)
        assert_whole_keys_and_help(app)


async def test_the_footer_fits_again_when_the_terminal_narrows_and_widens() -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SIZE) as pilot:
        await drive("2", "t", "t", "t")(pilot)  # dead jobs: x and d act on them
        wide = assert_whole_keys_and_help(app)
        assert "d Discard" in wide and "t State" in wide
        await pilot.resize_terminal(*SMALL)
        await settle(pilot)
        narrow = assert_whole_keys_and_help(app)
        assert narrow[0] == "? More keys" and len(narrow) < len(wide)
        await pilot.resize_terminal(*SIZE)
        await settle(pilot)
        assert assert_whole_keys_and_help(app) == wide
