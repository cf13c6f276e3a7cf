"""Operator promises each pinned where a plausible slip would otherwise pass unseen: a
tenant-scoped operator retries (also from a step) or discards no job of another tenant by its id,
pauses or resumes no queue and sends events to its own tenant only (I25); a read-only operator's
retry with children is refused even with nothing to retry; a bulk given its dry run changes no
more jobs than that dry run matched, within one batch and one job at a time; a bulk cancel's dry
run counts, and its apply cancels, a job in each live state."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engine.actions import Operator
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.introspect import Introspector
from engine.projections import JobFilter
from engine.testing import claim_of, make_job
from engine.types import Ack, JobState, StoredStep

DEAD = JobFilter(state=JobState.DEAD)


def op(driver: Driver, clock: FakeClock, **kw) -> Operator:  # type: ignore[no-untyped-def]
    return Operator(driver, clock=clock, actor="alice", **kw)


async def _dead_left(driver: Driver) -> int:
    page = await driver.job_page(where=DEAD, limit=10, cursor=None, count_cap=10, budget_ms=None)
    return len(page.items)


async def test_a_tenant_scoped_operator_cannot_retry_or_discard_another_tenants_dead_job_by_id(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD, tenant="acme")
    scoped = op(driver, clock, tenant="globex")
    for action in (scoped.retry, scoped.discard):
        with pytest.raises(JobsError) as e:
            await action(dead.id)
        assert e.value.code == "X_NOT_FOUND"
    assert await driver.job_get(job_id=dead.id) == dead
    assert await driver.job_history(job_id=dead.id) == []


async def test_a_tenant_scoped_operator_cannot_pause_or_resume_a_queue(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    await make_job(driver, ids, clock.now(), queue="emails", tenant="globex")
    scoped = op(driver, clock, tenant="globex")
    for call in (lambda: scoped.pause("emails"), lambda: scoped.pause("other", create=True)):
        with pytest.raises(JobsError) as e:
            await call()
        assert e.value.code == "X_INVALID_ARGUMENT" and "whole fleet" in e.value.cause
    assert not any(q.paused for q in (await Introspector(driver, clock=clock).queues()).queues)
    await op(driver, clock).pause("emails", note="smtp down")
    with pytest.raises(JobsError) as e:
        await scoped.resume("emails")
    assert e.value.code == "X_INVALID_ARGUMENT" and "whole fleet" in e.value.cause
    (q,) = (await Introspector(driver, clock=clock).queues()).queues
    assert (q.name, q.paused, q.paused_by, q.pause_note) == ("emails", True, "alice", "smtp down")


async def test_a_read_only_operator_refuses_a_retry_with_children_even_with_nothing_to_retry(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    ro = op(driver, clock, read_only=True)
    with pytest.raises(JobsError) as e:
        [r async for r in ro.retry_all_with_children(DEAD)]
    assert e.value.code == "X_READ_ONLY"
    dead = await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    with pytest.raises(JobsError) as e:
        [r async for r in ro.retry_all_with_children(DEAD)]
    assert e.value.code == "X_READ_ONLY"
    assert await driver.job_get(job_id=dead.id) == dead


async def test_a_bulk_given_its_dry_run_changes_no_more_jobs_than_it_matched_within_one_batch(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    for _ in range(2):
        await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    plan = await op(driver, clock).plan("retry", DEAD)
    # A process whose clock runs behind settles one more, stamped before the dry run's instant.
    await make_job(driver, ids, clock.now() - timedelta(seconds=1), state=JobState.DEAD)
    res = await op(driver, clock).bulk("retry", DEAD, plan=plan)  # one batch holds all three
    assert (plan.matched, res.changed, res.skipped) == (2, 2, 0)
    assert await _dead_left(driver) == 1


async def test_a_retry_with_children_given_its_dry_run_reaches_no_more_jobs_than_it_matched(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    for _ in range(2):
        await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    plan = await op(driver, clock).plan("retry", DEAD)
    await make_job(driver, ids, clock.now() - timedelta(seconds=1), state=JobState.DEAD)
    got = [r async for r in op(driver, clock).retry_all_with_children(DEAD, plan=plan)]
    assert (plan.matched, len(got), sum(r.changed for r in got)) == (2, 2, 2)
    assert await _dead_left(driver) == 1


async def test_a_bulk_cancel_counts_and_cancels_a_job_in_each_live_state_and_no_finished_one(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    live = (JobState.READY, JobState.DELAYED, JobState.SUSPENDED, JobState.PARKED, JobState.RUNNING)
    jobs = {st: await make_job(driver, ids, clock.now(), state=st) for st in live}
    done = [await make_job(driver, ids, clock.now(), state=st) for st in (JobState.COMPLETED, JobState.DEAD)]
    plan = await op(driver, clock).plan("cancel")
    assert (plan.matched, plan.would_change) == (5, 5)
    res = await op(driver, clock).bulk("cancel", plan=plan)
    assert (res.changed, res.skipped) == (5, 0)
    for st, job in jobs.items():
        row = await driver.job_get(job_id=job.id)
        assert row is not None and row.state is JobState.CANCELLED, st
    assert [await driver.job_get(job_id=j.id) for j in done] == done


async def test_a_tenant_scoped_operator_sends_events_to_its_own_tenant_only(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    scoped = op(driver, clock, tenant="acme")
    sent = await scoped.send_event("invoice.paid", {"invoice": 42})
    assert sent.tenant == "acme"  # not a tenantless event every tenant's waits could match
    with pytest.raises(JobsError) as e:
        await scoped.send_event("invoice.paid", {"invoice": 42}, tenant="globex")
    assert e.value.code == "X_TENANT_MISMATCH"


async def test_a_tenant_scoped_operator_cannot_retry_another_tenants_job_from_a_step(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    row = await make_job(driver, ids, clock.now(), state=JobState.RUNNING, tenant="acme")
    claim = claim_of(row)
    for seq, name in enumerate(("fetch", "render")):
        step = StoredStep(row.id, name, seq, "run", "completed", 1, claim.run, clock.now(), clock.now(), {"n": seq})
        assert await driver.step_save(claim=claim, step=step)  # type: ignore[attr-defined]
    assert await driver.job_ack_many(acks=[Ack(claim, {"ok": 1})], now=clock.now()) == [row.id]
    done = await driver.job_get(job_id=row.id)
    history = await driver.job_history(job_id=row.id)
    with pytest.raises(JobsError) as e:
        await op(driver, clock, tenant="globex").retry_from_step(row.id, "render")
    assert e.value.code == "X_NOT_FOUND"
    assert await driver.job_get(job_id=row.id) == done
    assert await driver.job_history(job_id=row.id) == history
    assert [s.name for s in await driver.step_load(job_id=row.id)] == ["fetch", "render"]
