"""This session's list says an action's note on a line of its own (its summary holds a line break),
not as a literal backslash-n, and still escapes every other control character."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.console import Console

from console.app import Activity
from console.screens.activity import activity_text


def test_a_summary_with_a_note_reads_on_two_lines_and_other_control_characters_stay_escaped() -> None:
    now = datetime(2026, 12, 8, 2, 30, tzinfo=UTC)
    said = "Discard: 8 discarded, 0 skipped.\nNote in the audit trail: cards expired\x1b[2J"
    out = Console(width=80, record=True, color_system=None)
    out.print(activity_text([Activity(now, True, said)], now))
    text = out.export_text()
    assert "\\n" not in text and "\x1b" not in text
    lines = [line.rstrip() for line in text.splitlines()]
    assert any(line.endswith("Discard: 8 discarded, 0 skipped.") for line in lines), lines
    assert any("Note in the audit trail: cards expired\\x1b[2J" in line for line in lines), lines
