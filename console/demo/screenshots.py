"""Regenerate screenshots/: `python -m console.demo.screenshots` (PNG needs the `screenshots` extra).

Every screen is rendered from the demo's world, as the snapshot tests use it
(``console.demo.world.seeded_source()``: the hour `jobs-console demo` also plays, here on the
memory driver with the clock stopped at its end), by Textual's own screenshot
path (the one pytest-textual-snapshot drives), so the pictures are deterministic: regenerating
them changes no byte unless a screen changed. Each SVG is also converted to PNG with cairosvg,
after swapping the SVG's Fira Code (which the converter may not have) for DejaVu Sans Mono, whose
glyphs are the same width, so the columns line up.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[2] / "screenshots"
SIZE = (120, 36)


def _filter(text: str) -> tuple[str, ...]:
    return ("2", "slash", *text, "enter")  # typed key by key, as the snapshot tests do


@dataclass(frozen=True)
class Shot:
    name: str
    caption: str
    press: tuple[str, ...] = ()
    size: tuple[int, int] = SIZE
    read_only: bool = False
    outage: bool = False  # the database goes away after the first refresh
    advance: tuple[float, ...] = ()  # then the world's clock moves on this many seconds before each refresh


# The same scenarios the snapshot tests pin (tests/console/test_snapshots.py), on the same seed.
SHOTS: tuple[Shot, ...] = (
    Shot("overview", "Overview: each queue's counts by state, oldest waiting age, throughput, workers, slots, pause"),
    Shot("jobs", "Jobs: the filterable, paginated list, newest first", press=("2",)),
    Shot(
        "job_detail",
        "Job detail: a dead letter's input, attempts, step trace and why it is dead",
        press=(*_filter("name=send_receipt"), "enter"),
    ),
    Shot(
        "job_detail_traceback",
        "Job detail, scrolled down: the last failed attempt's traceback under the attempts (u unfolds it)",
        press=(*_filter("name=send_receipt"), "enter", "end"),
    ),
    Shot(
        "job_detail_waiting",
        "Job detail: a job suspended on an event, and what it waits for",
        press=(*_filter("search=user:8"), "enter"),
    ),
    Shot(
        "job_detail_fan_in",
        "Job detail: a fan-in waiting for the statements it enqueued, and where they stand",
        press=(*_filter("name=close_month"), "enter"),
    ),
    Shot(
        "retry_from_step",
        "Retry from a step: choose where the re-run starts",
        press=(*_filter("name=send_receipt"), "enter", "f"),
    ),
    Shot(
        "why_parked",
        "Why is it not running? A parked job: the slot holders and when their leases end",
        press=(*_filter("state=parked"), "y"),
    ),
    Shot("why_queue", "Why is it not running? A paused queue: who paused it and when", press=("end", "y")),
    Shot(
        "dead_letters",
        "Dead letters: grouped by job and error code, stop reason, attempt n of m, first/last seen",
        press=("3",),
    ),
    Shot(
        "bulk_retry_dry_run",
        "A bulk retry's dry run: how many, by stop reason, code and tenant, before it lands",
        press=("3", "X"),
    ),
    Shot(
        "cancel_confirm",
        "Every mutating action names exactly what will change and asks first",
        press=(*_filter("state=running"), "c"),
    ),
    Shot("workers", "Workers: host, pid, queues, slots in use, last heartbeat (stale marked)", press=("4",)),
    Shot(
        "schedules",
        "Schedules: each cron task in words, its next and last run and that job's state; the leader and its lease",
        press=("5",),
    ),
    Shot(
        "outbox",
        "Outbox: the backlog and its age's trend, relays alive, live claims, failing rows; why a row is not published",
        press=("6",),
        advance=(2.0, 2.0, 2.0, 2.0),
    ),
    Shot(
        "backfills",
        "Backfills: each declared sweep per environment, a running pass's progress and ETA, the gate a start "
        "meets now, the ledger",
        press=("7", "down", "down"),
    ),
    Shot("help", "Help: every key of every screen, from the one action table", press=("question_mark",)),
    Shot(
        "activity_80x24",
        "Activity (a): this session's actions, then the audit log: who did what, when, and why",
        press=("a",),
        size=(80, 24),
    ),
    Shot(
        "read_only",
        "Read-only: no mutating action is offered (and the engine refuses them too)",
        press=("3",),
        read_only=True,
    ),
    Shot("database_down", "The database went away: a banner, and retries with backoff", outage=True),
    Shot("overview_80x24", "Overview in an 80x24 terminal", size=(80, 24)),
    Shot("dead_letters_80x24", "Dead letters in an 80x24 terminal", press=("3",), size=(80, 24)),
    Shot("backfills_80x24", "Backfills in an 80x24 terminal", press=("7", "down", "down"), size=(80, 24)),
    Shot(
        "bulk_retry_80x24",
        "A bulk retry's confirmation in an 80x24 terminal",
        press=("3", "X"),
        size=(80, 24),
    ),
    Shot(
        "bulk_progress_80x24",
        "A paced bulk retry running: its totals after each batch, and s to stop it between two",
        press=("3", "X", "shift+tab", "shift+tab", "shift+tab", "shift+tab", "space", "y"),
        size=(80, 24),
    ),
    Shot(
        "bulk_stopped_80x24",
        "A paced bulk retry stopped with s between two batches: what ran, and the rest left as it was",
        press=("3", "X", "shift+tab", "shift+tab", "shift+tab", "shift+tab", "space", "y", "s"),
        size=(80, 24),
    ),
    Shot(
        "queue_chart_80x24",
        "A queue's hour in an 80x24 terminal: completed, dead and wait p95 per minute (g on the Overview)",
        press=("down", "g"),
        size=(80, 24),
    ),
    Shot(
        "logs",
        "Logs of a job: its attempts and history from the database, and where the live events are",
        press=("3", "enter", "enter", "l"),
    ),
    Shot(
        "palette_80x24",
        "The command palette in an 80x24 terminal: a word of a command's description finds it (cron: Schedules)",
        press=("ctrl+p", *"cron"),
        size=(80, 24),
    ),
    Shot(
        "job_detail_child_80x24",
        "A job a fan-out enqueued names its parent and the step (o opens it)",
        press=(*_filter("name=render_statement state=completed"), "enter"),
        size=(80, 24),
    ),
    Shot(
        "cancel_children_80x24",
        "C on a fan-in: one confirmation cancels it and every live job below it, counted by state",
        press=(*_filter("name=close_month"), "enter", "C"),
        size=(80, 24),
    ),
    Shot(
        "dead_fan_in_80x24",
        "A fan-in that died of its dead job: what its wait answered, and X to retry it with that job",
        press=(*_filter("name=close_month state=dead"), "enter"),
        size=(80, 24),
    ),
    Shot(
        "retry_children_80x24",
        "X on a dead fan-in: one confirmation retries it from its wait and every dead job below it",
        press=(*_filter("name=close_month state=dead"), "enter", "X"),
        size=(80, 24),
    ),
    Shot(
        "marked_retry_80x24",
        "Marked rows (space), sorted by state (s): one confirmation names the count",
        press=("2", "s", "s", "s", "s", "s", "t", "t", "t", "space", "space", "space", "x"),
        size=(80, 24),
    ),
)


class _Outage:
    """Wraps a driver: once ``down``, every call fails the way a lost connection does."""

    def __init__(self, driver: Any) -> None:
        self._driver, self.down = driver, False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._driver, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                raise ConnectionRefusedError(
                    "connection to server at db.internal:5432 refused (is the server running?)"
                )
            return await attr(*args, **kwargs)

        return call


async def _settle(pilot: Any) -> None:
    """Until every data load has finished and any action flow is waiting on its modal (a flow is
    a worker that awaits the modal's dismissal, so it never finishes while the modal is up)."""
    from textual.screen import ModalScreen
    from textual.widgets import Input
    from textual.worker import WorkerState

    app = pilot.app
    for _ in range(3000):  # a script, not a test: it may poll (30 s at most)
        await pilot.pause()
        busy = [w for w in app.workers if w.state in (WorkerState.PENDING, WorkerState.RUNNING)]
        loads = [w for w in busy if w.group != "action"]
        if not loads and (not busy or isinstance(app.screen, ModalScreen)):
            break
        await pilot.pause(0.01)
    for node in app.screen.query(Input):
        node.cursor_blink = False
    await pilot.pause()


def _app(shot: Shot) -> tuple[Any, _Outage | None]:
    from console.app import JobsConsole
    from console.demo.world import seeded_engine, seeded_source
    from console.source import Source

    if not shot.outage:
        return JobsConsole(seeded_source(read_only=shot.read_only), refresh=60), None
    engine = seeded_engine()
    outage = _Outage(engine.driver)
    engine.driver = outage  # type: ignore[assignment]
    source = Source(engine, actor="console:test", database="db.internal/app", driver="postgres")
    return JobsConsole(source, refresh=60), outage


def render_svg(shot: Shot) -> str:
    """The shot as an SVG, drawn as snap_compare draws a snapshot: the app run headless at the
    shot's size, driven to its screen, then ``export_screenshot`` (all public Textual API)."""
    app, outage = _app(shot)

    async def drive(pilot: Any) -> None:
        await _settle(pilot)
        for key in shot.press:
            await pilot.press(key)
            await _settle(pilot)
        for seconds in shot.advance:
            app.source.engine.clock.advance(seconds)
            await pilot.press("r")
            await _settle(pilot)
        if outage is not None:
            outage.down = True
            await pilot.press("r")
            await _settle(pilot)
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        app.exit(app.export_screenshot(title=f"jobs-console · {shot.name}", simplify=True))

    svg = app.run(headless=True, auto_pilot=drive, size=shot.size)
    assert isinstance(svg, str)
    return svg


def to_png(svg: str, path: Path) -> None:
    try:
        import cairosvg
    except ImportError:
        sys.exit("PNG needs cairosvg: pip install -e '.[screenshots]' (or pass --svg-only)")
    cairosvg.svg2png(bytestring=svg.replace("Fira Code", "DejaVu Sans Mono").encode(), write_to=str(path))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="python -m console.demo.screenshots", description="Regenerate screenshots/ from the demo's world."
    )
    p.add_argument("names", nargs="*", help="only these shots (default: all)")
    p.add_argument("--svg-only", action="store_true", help="skip the PNG conversion (no cairosvg needed)")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    chosen = [s for s in SHOTS if not args.names or s.name in args.names]
    unknown = set(args.names) - {s.name for s in SHOTS}
    if unknown:
        sys.exit(f"unknown shot(s): {', '.join(sorted(unknown))}; known: {', '.join(s.name for s in SHOTS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    for shot in chosen:
        svg = render_svg(shot)
        (args.out / f"{shot.name}.svg").write_text(svg, encoding="utf-8")
        if not args.svg_only:
            to_png(svg, args.out / f"{shot.name}.png")
        print(f"screenshots/{shot.name}.{'svg' if args.svg_only else 'svg + png'}  {shot.caption}")


if __name__ == "__main__":
    main()
