"""A hurried operator's keys, at random but seeded: no sequence on any screen crashes the console.

A run starts from each of ROUTES in turn (every screen, a job in each state, help, the palette,
the filter bar) and makes a few random moves there: keys the screen on top binds and the global
ones, the keys anyone mashes (Escape, Enter, Tab, arrows, space, digits, letters), junk typed or
pasted into the filter bar, the palette and a confirmation's note, answers to every modal it
opens, clicks anywhere, and resizes between 80x24, 60x20 and 120x40; then Escape alone must bring
the console back to a root screen. After every move the app is running, no worker failed with a
fault of the console's own, no refresh failed, and the screen on top is a console screen or a
modal. Every move is settled before the next, so a seed is the same run every time; keys typed
faster than the console answers are pinned one case at a time in test_hurried_keys.py.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Callable

import pytest
from textual import events
from textual.command import CommandPalette
from textual.errors import NoWidget
from textual.geometry import Size
from textual.pilot import Pilot
from textual.screen import ModalScreen, Screen
from textual.widgets import Input
from textual.worker import Worker, WorkerCancelled, WorkerFailed

from console import actions
from console.app import JobsConsole
from console.demo.world import seeded_source
from console.screens.base import ConsoleScreen

SIZES = ((80, 24), (60, 20), (120, 40))
STEPS = int(os.environ.get("MONKEY_STEPS", "6"))  # random moves from each route's screen

# What anyone mashes, whatever the screen.
COMMON = (
    "escape",
    "escape",
    "enter",
    "enter",
    "tab",
    "shift+tab",
    "up",
    "down",
    "down",
    "left",
    "right",
    "pageup",
    "pagedown",
    "home",
    "end",
    "space",
    "slash",
    "question_mark",
    "ctrl+p",
)
DIGITS = tuple("1234567890")
LETTERS = tuple("abcdefghijklmnopqrstuvwxyzSXCD")
MODAL_KEYS = ("y", "n", "s", "o", "escape", "enter", "tab", "shift+tab", "up", "down", "space")
# What lands in a text field: filter words the engine reads, refuses, or has never heard of.
JUNK = (
    "state=dead",
    "state=bogus",
    "queue=emails",
    "queue=",
    "=",
    "==x",
    "code=-",
    "input.=1",
    "input.to=a@b",
    "name=a b",
    "tenant=acme",
    "until=yesterday",
    "search=",
    "0d64",
    "ffffff",
    "zz zz",
    "retry",
    "quit",
    "pause",
    "é✓",
    "[bold]x[/",
    "\\",
)
PASTES = ("0d64a1b2\n", "state=dead\nqueue=emails", "\x1b[31mred\x1b[0m", "x" * 600, "\t\r\n", "")
QUIT = {"q", "ctrl+c"}  # the only keys whose end is the app's


@pytest.fixture(autouse=True)
def _no_idle_sleeps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pilot waits for the process to look idle by sleeping 20 ms at a time, twice a key: a run of
    hundreds of keys spent most of its minute asleep. ``settle`` waits on what matters (every
    widget's messages handled, every data worker done), so a yield stands in for the sleep."""

    async def yield_once(min_sleep: float = 0, max_sleep: float = 1) -> None:
        await asyncio.sleep(0)

    monkeypatch.setattr("textual.app.wait_for_idle", yield_once)
    monkeypatch.setattr("textual.pilot.wait_for_idle", yield_once)
    # + and - still step the refresh interval, among intervals no run lasts: a refresh landing
    # mid-run at a time of the machine's choosing would make two runs of a seed differ.
    monkeypatch.setattr("console.app.INTERVALS", (60.0, 120.0))


async def settle(pilot: Pilot) -> None:
    """Every message handled and every data worker done. An action flow is waited on until it has
    finished or put its question on screen (waiting for an answer would wait for the operator):
    with Pilot's idle sleeps gone, a flow is often still reading what it will ask about when the
    key that started it has been handled."""
    app = pilot.app
    for _ in range(50):
        await pilot.pause()
        for worker in [w for w in app.workers if w.group != "action"]:
            await _done(worker)
        acting = [w for w in app.workers if w.group == "action" and w.is_running]
        if not acting or isinstance(app.screen, ModalScreen):
            break
    for node in app.screen.query(Input):
        node.cursor_blink = False
    await pilot.pause()


async def _done(worker: Worker[object]) -> None:
    try:
        await worker.wait()
    except (WorkerCancelled, WorkerFailed):  # a superseded refresh; a failure the screen shows
        pass


async def _resize(pilot: Pilot, size: Size) -> None:
    """Resize, and wait until the screen has been laid out at the new size: the app takes a resize
    on a timer of its own (a 120th of a second), which a run without idle sleeps would outpace."""
    await pilot.resize_terminal(size.width, size.height)
    for _ in range(10_000):
        if pilot.app.screen.outer_size == size:
            return
        await pilot.pause()
    raise AssertionError(f"the screen never took the size {size}")


def _screen_keys(screen: Screen[object]) -> tuple[str, ...]:
    """The keys the screen on top binds (its scope's and the global ones), quitting aside."""
    scope = getattr(screen, "SCOPE", None)
    if scope is None:
        return ()
    bound = actions.for_scope(scope) + actions.for_scope("global")
    return tuple(a.key for a in bound if a.key not in QUIT)


def _typing(app: JobsConsole) -> bool:
    return isinstance(app.focused, Input)


async def _step(pilot: Pilot, rng: random.Random) -> str:
    """One hurried move; says what it was, for the failure's message."""
    app = pilot.app
    on = type(app.screen).__name__.removesuffix("Screen")
    roll = rng.random()
    if roll < 0.05:
        size = rng.choice(SIZES)
        await _resize(pilot, Size(*size))
        return f"resize{size}@{on}"
    if roll < 0.10:
        width, height = app.size
        where = (rng.randrange(width), rng.randrange(height))
        try:
            await pilot.click(offset=where)
        except NoWidget:  # Pilot looks the widget up itself; a terminal's click there lands on nothing
            return f"click{where} on nothing@{on}"
        return f"click{where}@{on}"
    if _typing(app) and roll < 0.15:
        text = rng.choice(PASTES)
        app.focused.post_message(events.Paste(text))  # type: ignore[union-attr]
        return f"paste {text!r}@{on}"
    if _typing(app) and roll < 0.45:
        text = rng.choice(JUNK) if rng.random() < 0.7 else "".join(rng.choices("ab=. -1x", k=rng.randint(1, 6)))
        await pilot.press(*text)
        return f"type {text!r}@{on}"
    if isinstance(app.screen, ModalScreen) and not isinstance(app.screen, CommandPalette):
        key = rng.choice(MODAL_KEYS + LETTERS[:6])
    else:
        pool = _screen_keys(app.screen)
        pick = rng.random()
        if pool and pick < 0.5:
            key = rng.choice(pool)
        elif pick < 0.8:
            key = rng.choice(COMMON)
        elif pick < 0.9:
            key = rng.choice(DIGITS)
        else:
            key = rng.choice(LETTERS)
    await pilot.press(key)
    return f"{key}@{on}"


def _healthy(app: JobsConsole, done: list[str]) -> None:
    trail = " ".join(done[-30:])
    assert app._exception is None, f"crashed after: {trail}"
    assert app.return_code is None and app.is_running, f"exited after: {trail}"
    assert app.screen_stack, f"no screen after: {trail}"
    top = app.screen
    assert isinstance(top, (ConsoleScreen, ModalScreen)), f"{top!r} on top after: {trail}"
    faults = [a.summary for a in app.activity if a.summary.startswith("The console failed")]
    assert not faults, f"{faults[-1]} after: {trail}"
    assert app.db_error is None, f"{app.db_error} after: {trail}"


async def _escape_home(pilot: Pilot, done: list[str]) -> None:
    """Escape, and Escape again: every screen and modal gives way, down to a root screen."""
    app = pilot.app
    for _ in range(12):
        if len(app.screen_stack) == 1 and not isinstance(app.screen, ModalScreen):
            if not (isinstance(app.screen, ConsoleScreen) and app.screen.marked()):
                if not _typing(app):
                    return
        await pilot.press("escape")
        await settle(pilot)
        done.append("escape")
        _healthy(app, done)
    raise AssertionError(f"Escape did not leave {app.screen_stack} after: {' '.join(done[-30:])}")


# Where each stretch of random keys starts: every screen, and a job in each state that offers
# different keys (the newest job, a dead one, a parked one, a running one).
ROUTES = (
    ("1",),
    ("2",),
    ("2", "enter"),
    ("3", "enter", "enter"),
    ("2", "t", "enter"),
    ("2", "t", "t", "t", "t", "enter"),
    ("3",),
    ("4",),
    ("5",),
    ("6",),
    ("7",),
    ("1", "question_mark"),
    ("2", "slash"),
    ("3", "ctrl+p"),
)


async def _monkey(make: Callable[[], JobsConsole], seed: int, steps: int = STEPS) -> None:
    """``steps`` random moves from each route's screen, Escape home after each."""
    rng = random.Random(seed)
    app = make()
    quits: list[str] = []
    app.action_quit = lambda: quits.append("quit")  # type: ignore[assignment, method-assign]
    done: list[str] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for route in ROUTES:
            for key in route:
                await pilot.press(key)
                await settle(pilot)
                done.append(f"{key}(route)")
                _healthy(app, done)
            for _ in range(steps):
                done.append(await _step(pilot, rng))
                await settle(pilot)
                _healthy(app, done)
            await _escape_home(pilot, done)


def _seeded() -> JobsConsole:
    return JobsConsole(seeded_source(), refresh=60)


def _read_only() -> JobsConsole:
    return JobsConsole(seeded_source(read_only=True), refresh=60)


def _empty() -> JobsConsole:
    return JobsConsole(seeded_source(empty=True), refresh=60)


@pytest.mark.parametrize("seed", [1, 2])
async def test_no_key_sequence_on_any_screen_crashes_the_console(seed: int) -> None:
    await _monkey(_seeded, seed)


async def test_no_key_sequence_crashes_the_read_only_console() -> None:
    await _monkey(_read_only, 3)


async def test_no_key_sequence_crashes_the_console_on_an_empty_world() -> None:
    await _monkey(_empty, 4)
