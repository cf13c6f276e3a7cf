"""An action's note is plain text of at most NOTE_MAX characters, on every driver: one longer is
refused with its code, cause and fix before the action changes anything, and one of exactly that
length is kept whole in the job's history."""

from __future__ import annotations

import pytest

from engine.actions import Operator
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.ids import IdFactory
from engine.testing import make_job
from engine.text import NOTE_MAX
from engine.types import JobState


async def test_a_note_past_the_limit_is_refused_and_the_dead_job_stays_dead(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    ops = Operator(driver, clock=clock, actor="ann", note_fix="note='INC-7'")
    with pytest.raises(JobsError) as err:
        await ops.retry(dead.id, note="x" * (NOTE_MAX + 1))
    assert err.value.code == X_INVALID_ARGUMENT and err.value.fix == "note='INC-7'"
    assert f"{NOTE_MAX + 1} characters" in err.value.cause and f"at most {NOTE_MAX}" in err.value.cause
    assert (await driver.job_get(job_id=dead.id)).state is JobState.DEAD  # type: ignore[union-attr]


async def test_a_note_past_the_limit_leaves_a_queue_unpaused(driver: Driver, clock: FakeClock) -> None:
    await make_job(driver, IdFactory(clock, seed=3), clock.now(), queue="billing")
    ops = Operator(driver, clock=clock, actor="ann")
    with pytest.raises(JobsError) as err:
        await ops.pause("billing", note="y" * (NOTE_MAX + 1))
    assert err.value.code == X_INVALID_ARGUMENT
    assert not (await driver.queue_get(queue="billing")).paused


async def test_a_note_of_the_limit_is_kept_whole(driver: Driver, ids: IdFactory, clock: FakeClock) -> None:
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    note = "z" * NOTE_MAX
    assert (await Operator(driver, clock=clock, actor="ann").retry(dead.id, note=note)).changed
    assert note in [h.note for h in await driver.job_history(job_id=dead.id)]
