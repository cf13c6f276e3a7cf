"""A backfill pass's cancel and retry check their note as every operator action does: a note that
is not a str, or that PostgreSQL cannot store, is refused with the caller's own fix before the
pass changes, on every driver."""

from __future__ import annotations

import pytest

from engine.backfills import BackfillControl, Backfills, Batch
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.ids import IdFactory
from engine.testing import make_job
from engine.types import JobState

NAME = "flags"
FIX = "the caller's own way to give a note"


def _control(driver: Driver, clock: FakeClock) -> BackfillControl:
    bf = Backfills(version="1")

    @bf.backfill(NAME, source=lambda conn, after, size: ([], after), count=lambda conn: 0)
    def flags(batch: Batch) -> None:
        pass

    return BackfillControl(driver, bf, actor="ann", environment="production", clock=clock, note_fix=FIX)


@pytest.mark.parametrize("verb", ["cancel", "retry"])
@pytest.mark.parametrize("note", ["INC-7\x00 rerun", 7], ids=["a NUL", "not a str"])
async def test_a_pass_action_refuses_a_note_it_cannot_store_with_the_callers_fix_and_changes_nothing(
    driver: Driver, clock: FakeClock, ids: IdFactory, verb: str, note: object
) -> None:
    job = await make_job(
        driver, ids, clock.now(), state=JobState.READY, name=f"backfill:{NAME}", queue="backfills", key="pass"
    )
    with pytest.raises(JobsError) as err:
        await getattr(_control(driver, clock), verb)(NAME, note=note)
    assert err.value.code == X_INVALID_ARGUMENT and err.value.fix == FIX
    assert "backfill pass note" in err.value.cause
    assert (await driver.job_get(job_id=job.id)).state is JobState.READY  # type: ignore[union-attr]
