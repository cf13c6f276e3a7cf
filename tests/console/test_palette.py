"""The command palette opens and searches on every screen; a crash never exits 0."""

from __future__ import annotations

import pytest
from textual.command import CommandPalette

from console.app import JobsConsole
from console.demo.world import seeded_source
from tests.console.conftest import SMALL, settle

SCREENS = {
    "overview": (),
    "jobs": ("2",),
    "dead_letters": ("3",),
    "workers": ("4",),
    "schedules": ("5",),
    "outbox": ("6",),
    "job_detail": ("2", "enter"),
    "why": ("2", "y"),
    "help": ("question_mark",),
}


@pytest.mark.parametrize("screen", list(SCREENS))
async def test_palette_opens_and_searches_on_every_screen(screen: str) -> None:
    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        for key in SCREENS[screen]:
            await pilot.press(key)
            await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        assert isinstance(app.screen, CommandPalette)
        for key in "filter":  # every label holding "[/]" or "[?]" is rendered while matching
            await pilot.press(key)
            await settle(pilot)
        await pilot.press("backspace", "backspace", "backspace", "backspace", "backspace", "backspace")
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        assert app.return_code is None or app.return_code == 0
        assert app._exception is None
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, CommandPalette)


class _Crashing(JobsConsole):
    def on_mount(self) -> None:
        raise RuntimeError("a bug in a screen")

    def run(self, **kwargs):  # type: ignore[no-untyped-def, override]
        return super().run(headless=True, size=SMALL)


def test_a_console_that_crashed_exits_non_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from console import cli

    monkeypatch.setattr(cli, "open_source", lambda dsn, opts: seeded_source())
    monkeypatch.setattr(cli, "make_app", lambda source, opts: _Crashing(source, refresh=60))
    result = CliRunner().invoke(cli.app, ["--dsn", "postgresql://u@db.internal:5432/app"])
    assert result.exit_code != 0


async def test_the_palette_finds_a_command_by_the_words_of_its_description() -> None:
    # "cron" is in no command's name: the Schedules screen's description holds it. A name's
    # fuzzy match still ranks first ("work" finds Workers before any description holding it).
    from textual.command import CommandList

    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        for key in "work":
            await pilot.press(key)
        await settle(pilot)
        listed = app.screen.query_one(CommandList)
        first = str(listed.get_option_at_index(0).prompt)
        assert first.startswith("Workers"), first
        await pilot.press(*["backspace"] * 4, *"cron")
        await settle(pilot)
        listed = app.screen.query_one(CommandList)
        prompts = [str(listed.get_option_at_index(i).prompt) for i in range(listed.option_count)]
        assert len(prompts) == 1 and prompts[0].startswith("Schedules"), prompts
        await pilot.press("enter")
        await settle(pilot)
        assert app.current_mode == "schedules"


async def test_the_palette_offers_no_back_on_a_first_screen_and_offers_it_one_level_down() -> None:
    from textual.command import CommandList

    async def backs(app: JobsConsole, pilot) -> list[str]:  # type: ignore[no-untyped-def]
        await pilot.press("ctrl+p")
        await settle(pilot)
        await pilot.press(*"back")
        await settle(pilot)
        listed = app.screen.query_one(CommandList)
        prompts = [str(listed.get_option_at_index(i).prompt) for i in range(listed.option_count)]
        await pilot.press("escape")
        await settle(pilot)
        return [p for p in prompts if p.startswith("Back") and not p.startswith("Backfill")]

    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        assert await backs(app, pilot) == []  # the Overview: nothing to go back to
        await pilot.press("enter")  # a queue's jobs, one level down
        await settle(pilot)
        assert len(await backs(app, pilot)) == 1


async def test_the_palette_shows_the_key_of_every_command_a_capital_key_among_them() -> None:
    """Retry all is X, Cancel all C, Discard all D, Reverse sort S: each entry names its key, as
    the lower-case ones do ("Retry group  [x]")."""
    from textual.command import CommandList

    app = JobsConsole(seeded_source(), refresh=60)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("3", "ctrl+p")
        await settle(pilot)
        await pilot.press(*" all")
        await settle(pilot)
        listed = app.screen.query_one(CommandList)
        prompts = [str(listed.get_option_at_index(i).prompt).split("\n")[0] for i in range(listed.option_count)]
        for name, key in (("Retry all", "X"), ("Cancel all", "C"), ("Discard all", "D")):
            assert f"{name}  [{key}]" in prompts, prompts
        await pilot.press(*["backspace"] * 4, *"reverse")
        await settle(pilot)
        listed = app.screen.query_one(CommandList)
        first = str(listed.get_option_at_index(0).prompt).split("\n")[0]
        assert first == "Reverse sort  [S]", first
