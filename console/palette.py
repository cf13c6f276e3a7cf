"""Every style that carries meaning, in one place: the states and the signals (error, warning,
alert, flag), in colour and without.

In colour, each is an explicit colour chosen for contrast, not an ANSI name: Textual maps ANSI
names through its terminal theme (MONOKAI's red is 3.98:1 on the table's background) and a
16-colour terminal then gets the nearest of its 16. These keep at least 4.5:1 (WCAG AA) against
the console's backgrounds in truecolor, in 256 colours and in 16 (the VGA and xterm palettes);
tests/console/test_palette_contrast.py computes it.

Without colour (NO_COLOR set, ``JobsConsole`` calls ``use(no_color=True)``), the console draws no
colour at all (the app's NoColor filter) and these are attributes only: bold, reverse,
underline. Meaning never rests on them alone either: every state is also a word or a column.
"""

from __future__ import annotations

COLOUR: dict[str, str] = {
    # states
    "ready": "bold #5fd75f",
    "parked": "#ffaf00",
    "delayed": "#5fd7d7",
    "running": "bold #00afff",
    "suspended": "#d787ff",
    "dead": "bold #ff5f5f",
    "completed": "#87d787",
    "cancelled": "#9e9e9e",
    # signals
    "zero": "#969696",  # a count of zero: receded, still readable
    "error": "#ff5f5f",  # an error code or message
    "ok": "#5fd75f",  # live, landed, nothing holding it back
    "warn": "#ffaf00",  # worth a look (an age past its warning)
    "alert": "bold #ff5f5f",  # act now (an age past its alert, a stale heartbeat)
    "flag": "bold reverse #ffaf00",  # a standing condition: PAUSED, READ-ONLY
    "alarm": "bold reverse #ff5f5f",  # STALE, LEASE LAPSED
    "chart": "#5fd75f",  # completions in a chart
    "chart_failed": "#ff5f5f",  # failures in a chart
    "chart_wait": "#5fd7d7",  # latency in a chart
}
MONO: dict[str, str] = {
    "ready": "bold",
    "parked": "bold underline",
    "delayed": "",
    "running": "bold",
    "suspended": "underline",
    "dead": "bold reverse",
    "completed": "",
    "cancelled": "",
    "zero": "",
    "error": "bold",
    "ok": "",
    "warn": "bold",
    "alert": "bold underline",
    "flag": "bold reverse",
    "alarm": "bold reverse",
    "chart": "",
    "chart_failed": "bold",
    "chart_wait": "",
}
STATES = ("ready", "parked", "delayed", "running", "suspended", "dead", "completed", "cancelled")

_active = COLOUR


def use(*, no_color: bool) -> None:
    """Choose the styles for this process's console (the App calls it when it is built)."""
    global _active
    _active = MONO if no_color else COLOUR


def style(role: str) -> str:
    """The style of a state or a signal; a name it does not know gets none."""
    return _active.get(role, "")


def no_color() -> bool:
    return _active is MONO
