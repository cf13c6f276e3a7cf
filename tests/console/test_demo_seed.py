"""`jobs-console demo --seed N`: the seed reaches what the demo generates, the world's hour it plays
before the console opens and the traffic its workers then receive. The same seed gives the same
world and traffic (up to job ids and the real time it ends at); another seed, another."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from typer.testing import CliRunner

import console.demo.app as demo_app
from console.cli import app
from console.demo import jobs as demo_jobs
from console.demo.app import Demo
from console.demo.traffic import Traffic
from engine.errors import X_INVALID_ARGUMENT, JobsError

# Enqueued by a run or by the clock, not by the traffic: render_statement by a month's close, the
# tasks' occurrences at the real minute, the digest for the real day (its input names it).
NOT_TRAFFIC = {demo_jobs.render_statement.name, demo_jobs.nightly_digest.name} | {t.name for t in demo_jobs.DEMO_TASKS}


@pytest.fixture(autouse=True)
def no_pretend_work() -> Iterator[None]:
    before = demo_jobs.PACE.scale
    yield
    demo_jobs.PACE.scale = before


def _inp(name: str, value: Any) -> str:
    """An input as the seed decides it: without what the real clock or a fresh id decides (a
    backfill pass's run id, a cron occurrence's minute, the digest's day)."""
    if name == demo_jobs.nightly_digest.name:
        return ""
    shown = {k: v for k, v in value.items() if k not in ("run", "scheduled_for")} if isinstance(value, dict) else value
    return json.dumps(shown, sort_keys=True)


@dataclass
class Seen:
    seed: int
    world: list[tuple[Any, ...]]
    traffic: Counter[tuple[str, str, str]]


def _probe(seen: list[Seen]) -> type:
    """A Demo that, once `jobs-console demo` has made and started it, records the world it played
    and the first traffic its workers received, and ends the command before any console opens."""

    class SeedProbe(Demo):
        def start(self) -> Any:
            self.pace, self.traffic = 0.0, False  # the first burst only, no pretend work
            super().start()
            try:
                rows = list(self.engine.driver.state.jobs.values())  # type: ignore[union-attr]
                t0 = min(r.created_at for r in rows)
                world = sorted(
                    (
                        r.name,
                        r.tenant or "",
                        _inp(r.name, r.input),
                        r.state.value,
                        r.attempt,
                        (r.created_at - t0).total_seconds(),
                    )
                    for r in rows
                )
                played = {r.id for r in rows}
                asyncio.run(self._first_burst())
                traffic = Counter(
                    (r.name, r.tenant or "", _inp(r.name, r.input))
                    for r in self.engine.driver.state.jobs.values()  # type: ignore[union-attr]
                    if r.id not in played and r.name not in NOT_TRAFFIC
                )
                seen.append(Seen(self.seed, world, traffic))
            finally:
                self.stop()
            raise JobsError(X_INVALID_ARGUMENT, cause="seed probed", fix="jobs-console demo")

        async def _first_burst(self) -> None:
            serving = asyncio.create_task(self._serve())
            await asyncio.to_thread(self._ready.wait, 30)  # set once the first burst is enqueued
            self._halt()
            await serving

    return SeedProbe


def _demo(monkeypatch: pytest.MonkeyPatch, *args: str) -> Seen:
    seen: list[Seen] = []
    monkeypatch.setattr(demo_app, "Demo", _probe(seen))
    r = CliRunner().invoke(app, ["demo", "--memory", *args])
    assert r.exit_code == 1 and "seed probed" in r.stderr, r.output
    (one,) = seen
    return one


def _burst(seed: int) -> Counter[tuple[str, str, str]]:
    specs = Traffic(seed=seed).first_burst(datetime.now(UTC))
    return Counter(
        (s.job.name, s.tenant or "", _inp(s.job.name, s.input)) for s in specs if s.job.name not in NOT_TRAFFIC
    )


def test_demo_seed_gives_the_same_world_and_traffic_for_one_seed_and_another_for_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, again, other = (_demo(monkeypatch, "--seed", s) for s in ("3", "3", "4"))
    assert (first.seed, again.seed, other.seed) == (3, 3, 4)
    assert first.world == again.world and first.world != other.world
    # Each demo's workers received its seed's first burst (and what the world's outbox relays
    # publish meanwhile, which the comparison leaves aside), never the other seed's.
    assert not _burst(3) - first.traffic and not _burst(3) - again.traffic and not _burst(4) - other.traffic
    assert _burst(3) - other.traffic and _burst(4) - first.traffic


def test_demo_without_seed_plays_the_default_seed_7(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _demo(monkeypatch).seed == 7
