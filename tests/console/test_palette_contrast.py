"""Colour and no colour.

In colour, every state and signal style the console uses (console/palette.py) keeps at least 4.5:1
contrast (WCAG AA) against every background it is drawn on, read from the rendered app: in
truecolor, and after the terminal's own downgrade to 256 colours and to 16 (Rich's matching, then
the VGA palette Rich matches against and xterm's defaults, the two most common 16-colour
palettes). Under NO_COLOR the console draws no colour at all (every rendered segment keeps the
terminal's own colours) and the states speak through attributes and words.
"""

from __future__ import annotations

import pytest
from rich._palettes import EIGHT_BIT_PALETTE, STANDARD_PALETTE
from rich.color import Color as RichColor
from rich.color import ColorSystem, ColorType
from rich.segment import Segment
from rich.style import Style

from console import palette
from console.app import JobsConsole
from console.demo.world import seeded_source
from console.screens.confirm import ConfirmScreen
from console.widgets.keyed_table import KeyedTable
from console.widgets.state_bar import StateBar
from tests.console.conftest import SMALL, settle

AA = 4.5
VGA = [tuple(STANDARD_PALETTE[i]) for i in range(16)]
XTERM = [
    (0, 0, 0),
    (205, 0, 0),
    (0, 205, 0),
    (205, 205, 0),
    (0, 0, 238),
    (205, 0, 205),
    (0, 205, 205),
    (229, 229, 229),
    (127, 127, 127),
    (255, 0, 0),
    (0, 255, 0),
    (255, 255, 0),
    (92, 92, 255),
    (255, 0, 255),
    (0, 255, 255),
    (255, 255, 255),
]
Triplet = tuple[int, int, int]


def luminance(rgb: Triplet) -> float:
    def channel(v: int) -> float:
        c = v / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = rgb
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: Triplet, b: Triplet) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def shown(rgb: Triplet, system: str) -> Triplet:
    """The colour a terminal of that colour system shows for a truecolor ``rgb``."""
    if system == "truecolor":
        return rgb
    color = RichColor.from_rgb(*rgb)
    if system == "256":
        return tuple(EIGHT_BIT_PALETTE[color.downgrade(ColorSystem.EIGHT_BIT).number or 0])  # type: ignore[return-value]
    number = color.downgrade(ColorSystem.STANDARD).number or 0
    return (VGA if system == "16-vga" else XTERM)[number]  # type: ignore[return-value]


def test_the_contrast_formula_is_wcag() -> None:
    assert contrast((0, 0, 0), (255, 255, 255)) == pytest.approx(21.0)
    assert contrast((119, 119, 119), (255, 255, 255)) == pytest.approx(4.48, abs=0.01)


def test_textual_s_ansi_red_was_the_low_contrast_one() -> None:
    """Why the palette names colours: Textual's dark theme draws ANSI red as MONOKAI's
    (244, 0, 95), under 4.5:1 on the table's background, and a 16-colour terminal gets magenta."""
    from rich.terminal_theme import MONOKAI

    red = tuple(MONOKAI.ansi_colors[1])
    assert contrast(red, (30, 30, 30)) < AA  # type: ignore[arg-type]
    assert contrast(shown(red, "16-vga"), shown((30, 30, 30), "16-vga")) < AA  # type: ignore[arg-type]


async def rendered_backgrounds() -> dict[str, Triplet]:
    """The backgrounds states are drawn on, as the app renders them: the state bar, the tables
    of every list screen, the job detail and the confirm dialog."""
    app = JobsConsole(seeded_source(), refresh=60)
    found: dict[str, Triplet] = {}
    async with app.run_test(size=SMALL) as pilot:
        for key in ("1", "2", "3", "4", "5"):
            await pilot.press(key)
            await settle(pilot)
            for widget in [*app.screen.query(KeyedTable), *app.screen.query(StateBar)]:
                found[f"{app.current_mode}:{type(widget).__name__}"] = widget.background_colors[1].rgb
        await pilot.press("2", "enter")
        await settle(pilot)
        found["job detail"] = app.screen.query_one("#facts").background_colors[1].rgb
        await pilot.press("escape", "c")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        found["confirm"] = app.screen.query_one("#confirm-text").background_colors[1].rgb
    return found


async def test_every_state_and_signal_keeps_aa_contrast_on_every_background() -> None:
    """In each colour system: the backgrounds are rendered once (they are truecolor; each system's
    terminal downgrades them, as it does the styles)."""
    backgrounds = await rendered_backgrounds()
    assert len(backgrounds) >= 7
    failing = []
    for system in ("truecolor", "256", "16-vga", "16-xterm"):
        for role, spec in palette.COLOUR.items():
            style = Style.parse(spec)
            assert style.color is not None and style.color.type is ColorType.TRUECOLOR, role  # no ANSI names
            fg = style.color.triplet
            for where, bg in backgrounds.items():
                ratio = contrast(shown(tuple(fg), system), shown(bg, system))  # type: ignore[arg-type]
                if ratio < AA:
                    failing.append(f"{system}: {role} on {where} {bg}: {ratio:.2f}")
    assert not failing


def test_every_state_has_a_style_in_both_palettes_and_no_color_uses_no_colour() -> None:
    assert set(palette.STATES) <= set(palette.COLOUR) and set(palette.COLOUR) == set(palette.MONO)
    for role, spec in palette.MONO.items():
        style = Style.parse(spec or "none")
        assert style.color is None and style.bgcolor is None, role
    # the states that ask for attention read apart from each other without colour
    attention = {palette.MONO[s] for s in ("dead", "parked", "suspended", "running")}
    assert len(attention) == 4


def rendered_lines(app: JobsConsole) -> list[list[Segment]]:
    """The screen as drawn, line by line: the compositor's segments, after the app's filters."""
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    return [list(strip) for row in update.strips for strip in row]  # type: ignore[attr-defined]


def _colours(segments: list[Segment]) -> set[str]:
    out = set()
    for seg in segments:
        style = seg.style
        if style is None:
            continue
        for c in (style.color, style.bgcolor):
            if c is not None and not c.is_default:
                out.add(c.name)
    return out


@pytest.mark.parametrize("path", [(), ("2",), ("3",), ("4",), ("5",), ("2", "enter"), ("1", "p"), ("3", "x")])
async def test_no_color_renders_no_colour_at_all(monkeypatch: pytest.MonkeyPatch, path: tuple[str, ...]) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = JobsConsole(seeded_source(), refresh=60)
    assert app.no_color
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        for key in path:
            await pilot.press(key)
            await settle(pilot)
        segments = [seg for line in rendered_lines(app) for seg in line]
        assert segments and not _colours(segments)


async def test_no_color_marks_dead_and_parked_counts_with_attributes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        lines = rendered_lines(app)
        bar = next(line for line in lines if "suspended" in "".join(seg.text for seg in line))
        styles = {seg.text: seg.style for seg in bar if seg.text.strip().isdigit()}
        dead, parked = styles["13"], styles["2"]
        assert dead is not None and dead.bold and dead.reverse  # the dead count stands out as an alarm
        assert parked is not None and parked.underline
        billing = next(line for line in lines if "billing" in "".join(seg.text for seg in line))
        assert any(seg.text.strip() == "5" and seg.style and seg.style.reverse for seg in billing)
    monkeypatch.delenv("NO_COLOR")
    JobsConsole(seeded_source(), refresh=60)  # an app with colour takes the colours back
    assert not palette.no_color() and palette.style("dead") == palette.COLOUR["dead"]
