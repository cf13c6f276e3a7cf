"""A job's step trace as a timeline: one line per step with its status, duration bar and error."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from rich.text import Text
from textual.widgets import Static

from console import palette
from console.format import clean, duration, stamp

STATUS = {  # marker and style (console/palette.py's role): the word stays, so it reads with no colour
    "completed": ("✓", "ok"),
    "failed": ("✗", "alert"),
    "waiting": ("…", "suspended"),
    "running": ("▶", "running"),
}
BAR = 20


class StepLike(Protocol):
    name: str
    kind: str
    status: str
    attempt: int
    started_at: datetime
    finished_at: datetime | None
    error: str | None
    result_size: int | None

    @property
    def duration(self) -> float | None: ...


def timeline_text(steps: Sequence[StepLike], now: datetime) -> Text:
    if not steps:
        return Text("No steps recorded (the job has not reached a ctx.step call).", style="dim italic")
    longest = max((s.duration or (now - s.started_at).total_seconds() for s in steps), default=0) or 1
    width = min(28, max(len(s.name) for s in steps) + 2)
    out = Text()
    for i, s in enumerate(steps):
        if i:
            out.append("\n")
        mark, role = STATUS.get(s.status, ("?", ""))
        style = palette.style(role)
        took = s.duration if s.duration is not None else (now - s.started_at).total_seconds()
        filled = max(1, round(BAR * took / longest)) if took > 0 else 0
        out.append(f"{mark} ", style=style)
        out.append(clean(s.name, limit=width - 1).ljust(width))
        out.append(f"{s.kind:<6}", style="dim")
        out.append(f"{s.status:<10}", style=style)
        out.append(f"#{s.attempt:<3}", style="dim")
        out.append(stamp(s.started_at, now) + " ", style="dim")
        out.append("█" * filled + "░" * (BAR - filled) + " ", style=style)
        out.append(duration(s.duration) if s.duration is not None else f"{duration(took)}…")
        if s.result_size:
            out.append(f"  {s.result_size:,}B", style="dim")
        if s.error:
            out.append("\n    ")
            out.append(clean(s.error, limit=200), style=palette.style("error"))
    return out


class StepTimeline(Static):
    def show(self, steps: Sequence[StepLike], now: datetime) -> None:
        self.update(timeline_text(steps, now))
