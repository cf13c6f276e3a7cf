"""A read-only console offers no action anywhere: its help marks every mutating key as not
offered, and an action that reaches its source anyway is refused with the console's own words and
fix (how to open a writable console), not the engine operator's."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from console import actions
from console.demo.world import seeded_source
from console.screens.help import help_text
from engine.errors import JobsError
from engine.projections import JobFilter
from engine.types import JobState


def lines(read_only: bool) -> list[str]:
    out = Console(width=400, record=True, file=io.StringIO())
    out.print(help_text(read_only=read_only))
    return out.export_text().splitlines()


def test_a_read_only_help_marks_every_mutating_key_not_offered_and_a_writable_one_none() -> None:
    for read_only in (True, False):
        said = lines(read_only)
        for a in actions.ACTIONS:
            line = next(ln for ln in said if a.help in ln)
            assert ("(read-only: not offered)" in line) == (read_only and a.mutating), (read_only, line)


async def test_a_read_only_source_refuses_an_action_with_the_consoles_cause_and_fix() -> None:
    source = seeded_source(read_only=True)
    dead = (await source.jobs(JobFilter(state=JobState.DEAD))).items[0].id
    with pytest.raises(JobsError) as err:
        await source.retry(dead, note="INC-1")
    assert err.value.code == "X_READ_ONLY"
    assert err.value.cause == "retry was refused: the console is read-only"
    assert err.value.fix == 'jobs-console --dsn "$JOBS_DSN"'
    assert (await source.job(dead)).job.state is JobState.DEAD


async def test_a_source_made_read_only_after_it_opened_has_the_engine_refuse_its_actions_too() -> None:
    """`jobs-console --read-only` and a database role that may not act make an open source
    read-only: past the console's own check, the engine's operator, schedules and backfill
    control it holds refuse as well."""
    source = seeded_source()
    source.set_read_only("a reader's role")
    dead = (await source.jobs(JobFilter(state=JobState.DEAD))).items[0].id
    for call in (
        lambda: source._ops.retry(dead),
        lambda: source._schedules.trigger("demo.heartbeat_report"),
        lambda: source.backfill_door.control("production").start("accounts_email_lower"),
    ):
        with pytest.raises(JobsError) as err:
            await call()
        assert err.value.code == "X_READ_ONLY"
    assert (await source.job(dead)).job.state is JobState.DEAD
