"""The table and the JSON: every figure as median [min-max], our/peer and our/limit ratios, and
each target (bench/README.md) checked against the medians of this one run."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.drain import machine_busy
from bench.stats import Figure, Results

SYSTEMS = ("ours", "peer", "raw", "sql")
RESULTS_DIR = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Target:
    key: str
    against: str  # peer | raw | abs
    op: str  # >= | <= | <
    bound: float
    label: str


TARGETS = (
    Target("drain.p1", "peer", ">=", 1.5, "drain 1 process >= 1.5x pgqueuer"),
    Target("drain.p2", "peer", ">=", 1.5, "drain 2 processes >= 1.5x pgqueuer"),
    Target("enqueue.batch100", "peer", ">=", 1.0, "batched enqueue (100) >= 1x pgqueuer"),
    Target("enqueue.batch1000", "peer", ">=", 1.0, "batched enqueue (1000) >= 1x pgqueuer"),
    Target("enqueue.single", "peer", ">=", 1.0, "single enqueue >= 1x pgqueuer"),
    Target("latency.r100.p50", "peer", "<=", 1.0, "latency p50 at 100/s <= pgqueuer's"),
    Target("latency.r1000.p50", "peer", "<=", 1.0, "latency p50 at 1000/s <= pgqueuer's"),
    Target("latency.r100.p99", "abs", "<", 10.0, "latency p99 at 100/s < 10 ms"),
    Target("drain.p1", "raw", ">=", 0.70, "drain 1 process >= 70% of the bare loop"),
    Target("drain.p2", "raw", ">=", 0.70, "drain 2 processes >= 70% of the bare loop"),
)


def _num(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}"


def _cell(fig: Figure | None) -> str:
    if fig is None:
        return "-"
    if len(fig.samples) == 1:
        return _num(fig.median)
    return f"{_num(fig.median)} [{_num(fig.lo)}-{_num(fig.hi)}]"


def _ratio(a: Figure | None, b: Figure | None) -> float | None:
    if a is None or b is None or b.median == 0:
        return None
    return a.median / b.median


def check(res: Results) -> list[dict[str, Any]]:
    out = []
    for t in TARGETS:
        ours = res.get(t.key, "ours")
        value = ours.median if t.against == "abs" and ours else _ratio(ours, res.get(t.key, t.against))
        met = None
        if value is not None:
            met = value >= t.bound if t.op == ">=" else value <= t.bound if t.op == "<=" else value < t.bound
        out.append({"target": t.label, "key": t.key, "value": value, "bound": f"{t.op} {t.bound}", "met": met})
    return out


def table(res: Results) -> str:
    head = ["figure", "unit", "ours", "pgqueuer", "ours/peer", "limit (raw)", "ours/raw", "our SQL, bare loop"]
    rows = [head]
    for key in res.keys():
        figs = {s: res.get(key, s) for s in SYSTEMS}
        unit = next(f.unit for f in figs.values() if f is not None)
        rp, rr = _ratio(figs["ours"], figs["peer"]), _ratio(figs["ours"], figs["raw"])
        rows.append(
            [
                key,
                unit,
                _cell(figs["ours"]),
                _cell(figs["peer"]),
                f"{rp:.2f}x" if rp else "-",
                _cell(figs["raw"]),
                f"{rr:.0%}" if rr else "-",
                _cell(figs["sql"]),
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append("")
    for t in check(res):
        mark = {True: "met ", False: "MISS", None: "n/a "}[t["met"]]
        value = "-" if t["value"] is None else f"{t['value']:.2f}"
        lines.append(f"[{mark}] {t['target']}: {value} ({t['bound']})")
    lines.extend(f"FAILED RUN {e}" for e in res.errors)
    notes = sorted({f"{f.key} {f.system}: {f.note}" for f in res.figures.values() if f.note})
    if notes:
        lines.append("")
        lines.extend(f"  {n}" for n in notes)
    return "\n".join(lines)


def write_json(res: Results, meta: dict[str, Any], path: Path | None = None) -> Path:
    RESULTS_DIR.mkdir(exist_ok=True)
    path = path or RESULTS_DIR / time.strftime("bench-%Y%m%dT%H%M%SZ.json", time.gmtime())
    doc = {
        "meta": meta,
        "figures": [f.as_json() for f in res.figures.values()],
        "targets": check(res),
        "errors": res.errors,
    }
    text = json.dumps(doc, indent=2, default=str)
    path.write_text(text, encoding="utf-8")
    (RESULTS_DIR / "latest.json").write_text(text, encoding="utf-8")
    return path


def expected_figures(*, worker: bool, steps: bool) -> list[tuple[str, str]]:
    """Every (figure, system) a full invocation produces; the quick mode must produce them all."""
    out = [(f"enqueue.{k}", s) for k in ("single", "batch100", "batch1000") for s in ("ours", "peer", "raw")]
    out += [(k, "raw") for k in ("lifecycle.single.c1", "lifecycle.batch100.c1", "lifecycle.batch100.c4")]
    out += [
        (f"drain.p{p}{cpu}", s)
        for p in (1, 2)
        for cpu in ("", *((".cpu",) if machine_busy() is not None else ()))
        for s in ("peer", "raw", "sql", *(("ours",) if worker else ()))
    ]
    out += [
        (f"latency.r{r}.{q}", s)
        for r in (100, 1000)
        for q in ("p50", "p99")
        for s in ("peer", *(("ours",) if worker else ()))
    ]
    if steps:
        out += [(f"{k}.{f}", "ours") for k in ("steps5", "steps5async") for f in ("jobs", "steps")]
    return out
