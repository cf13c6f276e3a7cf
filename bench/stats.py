"""Figures: every one is the median of several runs, kept with its min and max."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field


@dataclass
class Figure:
    key: str  # e.g. "drain.p1"
    system: str  # ours | peer | raw (minimal table, no engine) | sql (our statements, no engine)
    unit: str  # jobs/s | ms | steps/s ...
    higher_is_better: bool = True
    samples: list[float] = field(default_factory=list)
    note: str = ""  # the settings that gave this figure

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def lo(self) -> float:
        return min(self.samples)

    @property
    def hi(self) -> float:
        return max(self.samples)

    def as_json(self) -> dict[str, object]:
        return {
            "key": self.key,
            "system": self.system,
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "median": self.median,
            "min": self.lo,
            "max": self.hi,
            "runs": len(self.samples),
            "samples": self.samples,
            "note": self.note,
        }


class Results:
    def __init__(self) -> None:
        self.figures: dict[tuple[str, str], Figure] = {}
        self.errors: list[str] = []  # runs that failed (the invocation went on without them)

    def add(
        self,
        key: str,
        system: str,
        value: float,
        *,
        unit: str = "jobs/s",
        higher_is_better: bool = True,
        note: str = "",
    ) -> None:
        fig = self.figures.get((key, system))
        if fig is None:
            fig = self.figures[(key, system)] = Figure(key, system, unit, higher_is_better)
        fig.samples.append(value)
        if note:
            fig.note = note

    def put(self, fig: Figure) -> None:
        self.figures[(fig.key, fig.system)] = fig

    def get(self, key: str, system: str) -> Figure | None:
        return self.figures.get((key, system))

    def keys(self) -> list[str]:
        seen: dict[str, None] = {}
        for key, _ in self.figures:
            seen.setdefault(key)
        return list(seen)
