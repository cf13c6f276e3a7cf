"""A job's step trace as a timeline: one line per step with its status, the run it ran in, and a
bar placed on that run's time axis (where in the run it started, how long it took), so a sleep
or an event wait shows as the gap it is and a retry from a step shows its steps in a later run.

Runs are numbered from 1 in the order they ran (the job detail's attempt table numbers them the
same way): a retry from a step starts a new run, though its attempt count starts at 1 again.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from rich.text import Text
from textual.widgets import Static

from console import palette
from console.format import clean, stamp
from engine.durations import duration

STATUS = {  # marker and style (console/palette.py's role): the word stays, so it reads with no colour
    "completed": ("✓", "ok"),
    "failed": ("✗", "alert"),
    "waiting": ("…", "suspended"),
    "running": ("▶", "running"),
}
BAR = 20
Span = tuple[datetime, datetime]


class StepLike(Protocol):
    """What the timeline reads of a step (engine.records.StepRecord, frozen: read-only here too)."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def started_at(self) -> datetime: ...
    @property
    def finished_at(self) -> datetime | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def result_size(self) -> int | None: ...
    @property
    def duration(self) -> float | None: ...


def run_of(spans: Sequence[Span], at: datetime) -> int:
    """The index of the run a step that started ``at`` ran in: the last run started by then."""
    return max(0, bisect_right([start for start, _ in spans], at) - 1)


def bar(start: datetime, took: float, span: Span, cells: int = BAR) -> str:
    """``cells`` cells for the run's time axis: the step's cells filled from where it started."""
    total = (span[1] - span[0]).total_seconds()
    if total <= 0:
        return "█" * cells if took > 0 else "▏" + "·" * (cells - 1)
    lead = min(cells - 1, max(0, int(cells * (start - span[0]).total_seconds() / total)))
    width = min(cells - lead, max(1, round(cells * took / total))) if took > 0 else 0
    if width == 0:
        return "·" * lead + "▏" + "·" * (cells - lead - 1)
    return "·" * lead + "█" * width + "·" * (cells - lead - width)


def timeline_text(
    steps: Sequence[StepLike], now: datetime, spans: Sequence[Span] = (), *, settled: bool = False
) -> Text:
    """``spans``: the job's runs, (start, end) in the order they ran (console/screens/job_detail.py
    runs_of); without them every step is placed on one axis from the first start to the last end.
    ``settled``: the job will not run again (completed, dead, cancelled), so no step is to come."""
    if not steps:
        if settled:
            return Text("No steps: it ran without a ctx.step call.", style="dim italic")
        return Text("No steps recorded (the job has not reached a ctx.step call).", style="dim italic")
    if not spans:
        first = min(s.started_at for s in steps)
        last = max((s.finished_at or now) for s in steps)
        spans = [(first, last)]
    width = min(28, max(len(s.name) for s in steps) + 2)
    kinds = max(6, max(len(s.kind) for s in steps) + 1)  # "enqueue" takes two more than the rest
    cells = BAR - (kinds - 6)  # the axis gives them back: a row still fits 80 columns
    out = Text()
    out.append(f"  {'step'.ljust(width)}{'kind'.ljust(kinds)}{'status':<10}{'run':<5}{'started':<9}", style="underline")
    out.append(f"{'on the run:'.ljust(cells)} {'took':<8}", style="underline")
    for s in steps:
        out.append("\n")
        mark, role = STATUS.get(s.status, ("?", ""))
        style = palette.style(role)
        took = s.duration if s.duration is not None else (now - s.started_at).total_seconds()
        i = run_of(spans, s.started_at)
        out.append(f"{mark} ", style=style)
        out.append(clean(s.name, limit=width - 1).ljust(width))
        out.append(s.kind.ljust(kinds), style="dim")
        out.append(f"{s.status:<10}", style=style)
        out.append(f"#{i + 1:<4}", style="dim")
        out.append(stamp(s.started_at, now).ljust(9), style="dim")
        out.append(bar(s.started_at, took, spans[i], cells) + " ", style=style)
        out.append(duration(s.duration) if s.duration is not None else f"{duration(took)}…")
        if s.result_size:
            out.append(f"  {s.result_size:,}B", style="dim")
        if s.error:
            out.append("\n    ")
            out.append(clean(s.error, limit=200), style=palette.style("error"))
    return out


class StepTimeline(Static):
    def show(self, steps: Sequence[StepLike], now: datetime, spans: Sequence[Span] = ()) -> None:
        self.update(timeline_text(steps, now, spans))
