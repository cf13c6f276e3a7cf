"""The Backfills screen's words: a backfill's row, its pass's progress bar, the gate a start meets
now, and its ledger rows. Pure functions of the engine's projections (engine.backfills'
BackfillView, Progress, Gate and engine.records.BackfillRun), so they are tested without a screen.

Status is the engine's, per environment (engine.backfills.views.status_here): a row is "running"
only when the live pass is that environment's own; in another environment the same pass shows as
the gate (X_BACKFILL_RUNNING) that a start meets.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from console.format import cell, clean, short_id, since
from engine.durations import duration

STATUS_STYLE = {
    "pending": "bold yellow",
    "running": "bold cyan",
    "completed": "green",
    "failed": "bold red",
    "stalled": "bold magenta",
    "not declared": "dim",
}
RUN_STYLE = {**STATUS_STYLE, "cancelled": "yellow", "queued": "cyan", "running": "cyan", "pending": ""}
FILLED, EMPTY = "█", "░"
# A gate's fix as this screen's key does it (the engine's fix names the CLI's command).
HERE = {"X_BACKFILL_APPLIED": "f here forces a rerun"}


def own_live(v: Any) -> bool:
    """The live pass is this environment's (so this row may cancel it)."""
    return bool(v.status == "running")


def fraction(p: Any) -> float | None:
    if p is None or not p.planned:
        return None if p is None or p.planned is None else 1.0
    return min(p.swept / p.planned, 1.0)


def bar(frac: float | None, width: int) -> Text:
    """A bar of ``width`` cells and the percentage (the blocks carry it without colour too)."""
    if frac is None:
        return Text(EMPTY * width + "   —", style="dim")
    filled = round(frac * width)
    out = Text(FILLED * filled, style="cyan")
    out.append(EMPTY * (width - filled), style="dim")
    out.append(f" {frac * 100:3.0f}%")
    return out


def mode(run: Any) -> str:
    if run is None:
        return "—"
    return ("forced " if run.forced else "") + ("dry run" if run.dry_run else "write")


def _n(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def row_cells(v: Any) -> dict[str, Text]:
    """Every column's cell, by column key (the screen picks the columns its width affords)."""
    status = v.status
    live = status == "running"
    # A completed dry run made nothing applied: its 100% would read as done, so it shows none.
    quiet = v.last is not None and v.last.dry_run and v.last.status == "completed"
    p = None if quiet else v.progress
    frac = fraction(p)
    rate = "" if not live or p is None or p.batches_per_second is None else f"{p.batches_per_second:.2f}"
    eta = "" if not live or p is None or p.eta_seconds is None else duration(p.eta_seconds)
    return {
        "name": cell(v.name, limit=30, style="bold"),
        "env": cell(v.environment, limit=14),
        "status": Text(status.upper() if status in ("failed", "stalled") else status, style=STATUS_STYLE[status]),
        "bar": bar(frac, 10) if p is not None else Text(""),
        "done": Text("" if frac is None else f"{frac * 100:.0f}%", justify="right"),
        "swept": Text(_n(p.swept) if p else "", justify="right"),
        "remaining": Text(_n(p.remaining) if p else "", justify="right"),
        "rate": Text(rate, justify="right"),
        "eta": Text(eta, justify="right"),
        "gate": Text(v.gate.code if v.gate else "—", style="yellow" if v.gate else "dim"),
    }


def declaration(v: Any) -> str:
    envs = ", ".join(v.environments) if v.environments else "every environment"
    rate = "as fast as it goes" if v.rate is None else f"{v.rate:g} batches/s"
    needs = f" · requires {v.requires}" if v.requires else ""
    return f"batches of {v.batch_size:,} · {rate} · declared for {envs}{needs}"


def progress_text(v: Any, now: Any, *, console_env: str, compact: bool = False) -> Text:
    """The selected row: its declaration (unless ``compact``), its latest pass here (live while it
    runs) with a bar."""
    head = Text(clean(v.name, limit=40), style="bold")
    head.append(f" in {clean(v.environment, limit=20)}")
    if v.environment != console_env:
        head.append(f" (this console acts in {clean(console_env, limit=20)})", style="dim")
    if not compact:
        head.append(f"\n{declaration(v)}", style="dim")
    last, p = v.last, v.progress
    if last is None or p is None:
        head.append("\nNo pass has run here: ", style="")
        head.append("d", style="bold")
        head.append(" starts a dry run (reads and counts, writes nothing), ")
        head.append("w", style="bold")
        head.append(" a write pass.")
        return head
    live = own_live(v)
    head.append("\n")
    head.append(f"{mode(last)} pass ", style="bold")
    head.append(f"run {short_id(last.id)} · job {short_id(last.job_id or '—')} · {last.status}", style="")
    head.append(f" · started {since(last.started_at, now)} by {clean(last.actor or '?', limit=30)}")
    if last.app_version:
        head.append(f" · app {clean(last.app_version, limit=20)}", style="dim")
    head.append("\n")
    head.append_text(bar(fraction(p), 30))
    if last.dry_run:  # it wrote nothing: its "remaining" would read as rows left to write
        head.append(f"  {_n(p.swept)} of {_n(p.planned)} rows read, none written · {p.batches:,} batches")
    else:
        head.append(f"  {_n(p.swept)} of {_n(p.planned)} rows · {_n(p.remaining)} remaining · {p.batches:,} batches")
    if live:
        if p.batches_per_second is not None:
            head.append(f" · {p.batches_per_second:.2f} batches/s")
        if p.eta_seconds is not None:
            head.append(" · ETA ")
            head.append(duration(p.eta_seconds), style="bold")
    elif last.finished_at is not None:
        head.append(f" · took {duration((last.finished_at - last.started_at).total_seconds())}", style="dim")
    if last.error:
        head.append(f"\n{clean(last.error, limit=200)}", style="red" if last.status != "cancelled" else "yellow")
    return head


def gate_text(v: Any, *, keys: bool = True) -> Text:
    """The gate a write pass meets now (its code and fix), or that it would start; ``keys``: name
    the keys that act (not in read-only mode). The cause is ``gate_cause``'s, shown under it."""
    g = v.gate
    last = v.last
    if g is None:
        t = Text("A write pass would start now", style="green")
        if keys:
            t.append(" (w)", style="bold")
            t.append("; a dry run ")
            t.append("(d)", style="bold")
            t.append(" reads and counts, and writes nothing")
            if last is not None and last.status in ("failed", "cancelled", "stalled"):
                t.append(f"; x continues the {last.status} pass from batch {last.batches + 1}")
        return t.append(".")
    t = Text("A write pass is refused now: ", style="bold")
    t.append(g.code, style="bold yellow")
    t.append("  fix: ", style="dim")
    if keys and g.code in HERE:
        t.append(HERE[g.code], style="bold")
        t.append(" (or ", style="dim")
        t.append(clean(g.fix, limit=200), style="dim")
        t.append(")", style="dim")
    else:
        t.append(clean(g.fix, limit=200), style="bold")
    return t


def gate_cause(v: Any) -> Text:
    """Why the gate refuses a write pass now, empty when none does (it scrolls on screen, so a
    long one is kept to twice what the other panels cut at)."""
    return Text("" if v.gate is None else clean(v.gate.cause, limit=600))


def history_cells(run: Any, now: Any) -> tuple[Text, ...]:
    took = "" if run.finished_at is None else duration((run.finished_at - run.started_at).total_seconds())
    return (
        Text(short_id(run.id), style="dim"),
        Text(since(run.started_at, now)),
        cell(run.actor or "—", limit=24),
        Text(mode(run)),
        Text(run.status, style=RUN_STYLE.get(run.status, "")),
        Text(_n(run.swept), justify="right"),
        Text(f"{run.batches:,}", justify="right"),
        Text(took, justify="right"),
        cell(run.error or "", limit=36, style="red" if run.status in ("failed", "stalled") else "dim"),
    )
