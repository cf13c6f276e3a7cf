"""The backfill ledger, the same from every driver (I22): one row per pass, a completed row never
edited, the fenced progress write, applied = the latest completed write pass per environment, the
live pass jobs, and the audited resume of a dead or cancelled pass with its steps kept."""

from __future__ import annotations

from dataclasses import replace

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.records import BackfillRun, LivePass
from engine.testing import claim_of as _claim_of
from engine.testing import make_job
from engine.types import JobState, StoredStep

PASS = "backfill:accounts"


def _run(ids: IdFactory, clock: FakeClock, **kw: object) -> BackfillRun:
    base = BackfillRun(
        id=ids.new(),
        name="accounts",
        environment="production",
        job_id=None,
        status="queued",
        dry_run=False,
        forced=False,
        started_at=clock.now(),
        app_version="1.4.2",
        actor="alice",
    )
    return replace(base, **kw)  # type: ignore[arg-type]


async def test_i22_a_pass_row_goes_queued_running_completed_and_is_never_edited_after(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    job = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, name=PASS, queue="backfills", key="pass")
    run = _run(ids, clock, job_id=job.id)
    assert await driver.backfill_open(run=run) and not await driver.backfill_open(run=run)
    assert await driver.backfill_begin(run_id=run.id, planned=5000, now=clock.now())
    assert await driver.backfill_progress(run_id=run.id, claim=_claim_of(job), swept=1000, batches=1)
    clock.advance(3600)
    # A resume keeps the first count and stamps its own start and the rows swept before it.
    assert await driver.backfill_begin(run_id=run.id, planned=7, now=clock.now())
    (resumed,) = await driver.backfill_runs(names=["accounts"], environment="production", limit=10)
    assert (resumed.planned, resumed.resumed_at, resumed.resumed_swept) == (5000, clock.now(), 1000)
    clock.advance(5)
    assert await driver.backfill_finish(
        run_id=run.id, outcome="completed", swept=5000, batches=5, error=None, now=clock.now()
    )
    (done,) = await driver.backfill_runs(names=["accounts"], environment="production", limit=10)
    assert (done.status, done.planned, done.swept, done.batches, done.finished_at) == (
        "completed",
        5000,
        5000,
        5,
        clock.now(),
    )
    assert (done.actor, done.app_version, done.job_id, done.dry_run) == ("alice", "1.4.2", job.id, False)
    # Completed: every later write is refused and the row stays as it was.
    assert not await driver.backfill_begin(run_id=run.id, planned=1, now=clock.now())
    assert not await driver.backfill_finish(
        run_id=run.id, outcome="failed", swept=0, batches=0, error="x", now=clock.now()
    )
    assert await driver.backfill_runs(names=None, environment=None, limit=10) == [done]


async def test_i22_progress_is_fenced_on_the_pass_job_still_held_by_the_claim(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    job = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, name=PASS, queue="backfills", key="pass")
    run = _run(ids, clock, job_id=job.id)
    await driver.backfill_open(run=run)
    await driver.backfill_begin(run_id=run.id, planned=10, now=clock.now())
    await driver.job_cancel(job_id=job.id, tenant=None, now=clock.now(), actor="bob")
    assert not await driver.backfill_progress(run_id=run.id, claim=_claim_of(job), swept=5, batches=1)
    (row,) = await driver.backfill_runs(names=None, environment=None, limit=10)
    assert (row.swept, row.batches) == (0, 0)


async def test_i22_applied_is_the_latest_completed_write_pass_per_environment(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    rows = [
        _run(ids, clock, dry_run=True),  # a dry run applies nothing
        _run(ids, clock, environment="staging"),
        _run(ids, clock),
        _run(ids, clock, forced=True),
        _run(ids, clock, name="other"),  # failed
    ]
    for r in rows:
        await driver.backfill_open(run=r)
        await driver.backfill_begin(run_id=r.id, planned=1, now=clock.now())
        clock.advance(1)
        outcome = "failed" if r.name == "other" else "completed"
        await driver.backfill_finish(run_id=r.id, outcome=outcome, swept=1, batches=1, error=None, now=clock.now())
    applied = await driver.backfill_applied(environment="production")
    assert [(a.name, a.id) for a in applied] == [("accounts", rows[3].id)]
    assert [a.id for a in await driver.backfill_applied(environment="staging")] == [rows[1].id]
    history = await driver.backfill_runs(names=["accounts"], environment="production", limit=2)
    assert [h.id for h in history] == [rows[3].id, rows[2].id]  # newest first, limited


async def test_i22_live_passes_and_the_resume_of_a_cancelled_pass_keeps_its_steps(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    job = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, name=PASS, queue="backfills", key="pass")
    step = StoredStep(job.id, "batch-1", 1, "run", "completed", 1, job.run, clock.now(), clock.now(), {"rows": 3})
    assert await driver.step_save(claim=_claim_of(job), step=step)
    assert await driver.backfill_live(job_names=[PASS, "backfill:none"]) == [LivePass(job.id, PASS, JobState.RUNNING)]
    refused = await driver.backfill_pass_resume(job_id=job.id, now=clock.now(), actor="alice", note=None)
    assert refused is not None and not refused.changed  # it is live
    await driver.job_cancel(job_id=job.id, tenant=None, now=clock.now(), actor="bob")
    assert await driver.backfill_live(job_names=[PASS]) == []
    clock.advance(3)
    res = await driver.backfill_pass_resume(job_id=job.id, now=clock.now(), actor="alice", note="INC-9")
    assert res is not None and (res.changed, res.previous, res.state) == (True, JobState.CANCELLED, JobState.READY)
    row = await driver.job_get(job_id=job.id)
    assert row is not None and (row.state, row.attempt) == (JobState.READY, 0)
    assert [s.name for s in await driver.step_load(job_id=job.id)] == ["batch-1"]
    hist = [(h.kind, h.actor, h.note) for h in await driver.job_history(job_id=job.id)]
    assert hist[-1] == ("retried", "alice", "INC-9")
    other = await make_job(driver, ids, clock.now(), name=PASS, queue="backfills", key="other")
    assert (await driver.backfill_pass_resume(job_id=other.id, now=clock.now(), actor="a", note=None)).changed is False  # type: ignore[union-attr]
    assert await driver.backfill_pass_resume(job_id=ids.new(), now=clock.now(), actor="a", note=None) is None
