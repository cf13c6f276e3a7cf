"""Fan-out and fan-in end to end, on every driver: a declared job enqueues jobs in a step and
waits for them with ``ctx.step.wait_for_jobs``, run by the real worker (engine.testing.arun_due)
on a fake clock: the replay after the wait enqueues nothing again, and the answer carries each
job's outcome, a failed one's included."""

from __future__ import annotations

import asyncio
import re

import pytest

from engine.api import Engine, Enqueue
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.drivers.postgres import PostgresDriver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.ids import IdFactory
from engine.introspect import Introspector, make_filter
from engine.jobs import Registry, job
from engine.retry import RetryPolicy
from engine.runtime.fanin import POLL_FIRST
from engine.runtime.worker import Worker, WorkerConfig
from engine.testing import arun_due
from engine.types import JobState
from tests.engine.test_cli_introspect import cli

Q = "fanin-e2e"


@job(
    name="f.thumb",
    queue=f"{Q}-thumbs",
    idempotency_key=lambda inp: f"{inp['album']}:{inp['n']}",
    retry=RetryPolicy(attempts=1),
)
async def thumb(ctx, inp):  # type: ignore[no-untyped-def]
    if inp["n"] == 2:
        raise RuntimeError("image 2 is not an image")
    return {"px": 64 * (inp["n"] + 1)}


@job(name="f.album", queue=Q, idempotency_key=lambda inp: inp["album"])
async def album(ctx, inp):  # type: ignore[no-untyped-def]
    ids = await ctx.step.enqueue("fan-out", [Enqueue(thumb, {"album": inp["album"], "n": n}) for n in range(3)])
    outs = await ctx.step.wait_for_jobs("thumbs", ids, timeout=600)
    return {
        "px": [o["result"]["px"] for o in outs if o["state"] == "completed"],
        "failed": [o["error_code"] for o in outs if o["state"] != "completed"],
    }


@pytest.fixture
def eng(driver: Driver, clock: FakeClock) -> Engine:
    return Engine(driver, clock=clock, ids=IdFactory(clock, seed=11))


async def test_a_job_fans_out_in_a_step_and_fans_in_with_wait_for_jobs(
    eng: Engine, clock: FakeClock, driver: Driver, request: pytest.FixtureRequest
) -> None:
    parent = (await eng.aenqueue(album, {"album": "trip"})).id
    first = await arun_due(eng, [album])  # the album's queue only: its thumbs wait for their own
    assert [(e.name, e.outcome) for e in first.executions] == [("f.album", "suspended")]
    thumbs = await arun_due(eng, [thumb])
    assert sorted(e.outcome for e in thumbs.executions) == ["completed", "completed", "dead"]
    assert (await eng.aget(parent)).state is JobState.SUSPENDED
    kids = (await eng.driver.step_load(job_id=parent))[0].result
    if isinstance(driver, PostgresDriver):  # what `jobsctl show` says of a fan-in that waits
        r = await asyncio.to_thread(cli, "show", parent, "--dsn", request.getfixturevalue("pg_dsn"))
        assert r.exit_code == 0, r.output
        assert "Waiting for 3 jobs to settle, in step 'thumbs' (2 completed, 1 dead)" in r.stdout
        said = [line.split() for line in r.stdout.splitlines() if "waits for" in line]
        assert [(w[2], w[4], w[5:]) for w in said] == [
            (kids[0], "completed", []),
            (kids[1], "completed", []),
            (kids[2], "dead", ["X_HANDLER_FAILED"]),
        ]

    clock.advance(POLL_FIRST)
    second = await arun_due(eng, [album])
    assert [(e.name, e.outcome) for e in second.executions] == [("f.album", "completed")]
    row = await eng.aget(parent)
    assert row.state is JobState.COMPLETED and row.attempt == 1
    assert row.result == {"px": [64, 128], "failed": ["X_HANDLER_FAILED"]}
    page = await Introspector(eng).jobs(make_filter(name="f.thumb"))
    assert len(page.items) == 3  # the replay answered the stored ids: nothing enqueued again


async def test_a_retry_from_the_wait_waits_for_the_same_jobs_and_one_from_the_fan_out_enqueues_anew(
    eng: Engine, clock: FakeClock
) -> None:
    parent = (await eng.aenqueue(album, {"album": "again"})).id
    await arun_due(eng, [album, thumb])
    clock.advance(POLL_FIRST)
    await arun_due(eng, [album, thumb])
    first = await eng.aget(parent)
    assert first.state is JobState.COMPLETED

    await eng.aretry_from_step(parent, "thumbs", actor="ann")
    ran = await arun_due(eng, [album, thumb])  # its jobs have settled: the first look goes on
    assert [(e.name, e.outcome) for e in ran.executions] == [("f.album", "completed")]
    assert (await eng.aget(parent)).result == first.result

    await eng.aretry_from_step(parent, "fan-out", actor="ann")
    ran = await arun_due(eng, [album, thumb])
    assert sorted(e.outcome for e in ran.executions if e.name == "f.thumb") == ["completed", "completed", "dead"]
    page = await Introspector(eng).jobs(make_filter(name="f.thumb"))
    assert len(page.items) == 6  # three more, their keys free once the first three settled


async def plan_among_3000(pg_dsn: str, album: str, setup: str, table: str, probe: str) -> str:
    """The plan of the statement ``probe`` (sql/queries) for one id, once 3,000 thumbs of ``album``
    are enqueued, ``setup`` has run over them and ``table`` is analyzed."""
    import psycopg

    from engine.drivers.sqlfiles import Q as SQL

    eng = Engine(PostgresDriver(pg_dsn))
    try:
        await eng.aenqueue_many([Enqueue(thumb, {"album": album, "n": n}) for n in range(3000)])
    finally:
        await eng.aclose()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(setup)  # type: ignore[arg-type]
        conn.execute(f"analyze {table}")  # type: ignore[arg-type]
        query = getattr(SQL, probe).text.replace("%(id)s", "'0190f1a2-0000-7000-8000-000000000001'")
        query = re.sub(r"%\(\w+\)s", "null", query)  # a filter's parameters: none given
        return "\n".join(r[0] for r in conn.execute("explain " + query).fetchall())  # type: ignore[arg-type]


async def test_who_waits_for_a_job_is_one_probe_of_the_fan_in_index(pg_dsn: str) -> None:
    """Among 3,000 suspended jobs (sleeps, event waits), ten of them fan-ins, the question reads
    job_awaited (0018), not every suspended row."""
    setup = """update jobs.job set state = 'suspended',
                   wait = case when n < 10 then jsonb_build_object('kind', 'jobs', 'jobs', jsonb_build_array(id::text))
                               when n % 2 = 0 then '{"kind": "sleep"}'::jsonb
                               else jsonb_build_object('kind', 'event', 'event', 'e' || n) end
               from (select id as jid, row_number() over (order by id) as n from jobs.job) o where id = o.jid"""
    plan = await plan_among_3000(pg_dsn, "plan", setup, "jobs.job", "job_awaited_by")
    assert "job_awaited" in plan, plan


@job(name="f.probe", queue=f"{Q}-probe", idempotency_key=lambda inp: inp["k"])
async def probe(ctx, inp):  # type: ignore[no-untyped-def]
    try:
        return {"engine": ctx.engine is not None}
    except JobsError as err:
        return {"code": err.code, "fix": err.fix}


async def test_ctx_engine_is_the_workers_engine_and_a_worker_on_a_bare_driver_says_how_to_get_one(
    eng: Engine, driver: Driver, clock: FakeClock
) -> None:
    first = (await eng.aenqueue(probe, {"k": "with"})).id
    await arun_due(eng, [probe])
    assert (await eng.aget(first)).result == {"engine": True}

    bare = (await eng.aenqueue(probe, {"k": "bare"})).id
    async with Worker(driver, Registry([probe]), clock=clock, config=WorkerConfig(burst=True)) as w:
        await w.wait_stopped()
    got = (await eng.aget(bare)).result
    assert got["code"] == X_INVALID_ARGUMENT and "eng.worker" in got["fix"]


@job(name="f.spray", queue=Q, idempotency_key=lambda inp: inp["album"])
async def spray(ctx, inp):  # type: ignore[no-untyped-def]
    return await ctx.step.enqueue("fan-out", [Enqueue(thumb, {"album": inp["album"], "n": n}) for n in (0, 2)])


async def test_a_jobs_detail_lists_the_jobs_its_fan_out_enqueued_and_then_those_its_wait_waited_for(
    eng: Engine, clock: FakeClock, driver: Driver, request: pytest.FixtureRequest
) -> None:
    sprayed = (await eng.aenqueue(spray, {"album": "sprayed"})).id
    await arun_due(eng, [spray])
    view = Introspector(eng)
    kids = (await eng.aget(sprayed)).result
    d = await view.job(sprayed)
    assert d.awaited_as == "enqueued"
    assert [(a.id, a.state) for a in d.awaited] == [(k, JobState.READY) for k in kids]
    await arun_due(eng, [thumb])
    assert [a.state for a in (await view.job(sprayed)).awaited] == [JobState.COMPLETED, JobState.DEAD]
    if isinstance(driver, PostgresDriver):
        r = await asyncio.to_thread(cli, "show", sprayed, "--dsn", request.getfixturevalue("pg_dsn"))
        assert r.exit_code == 0, r.output
        said = [line.split()[:3] for line in r.stdout.splitlines() if line.strip().startswith("enqueued ")]
        assert said == [["enqueued", kids[0], "f.thumb"], ["enqueued", kids[1], "f.thumb"]]
        r = await asyncio.to_thread(cli, "show", kids[0], "--dsn", request.getfixturevalue("pg_dsn"))
        assert f"enqueued by {sprayed} f.spray completed in step 'fan-out'" in r.stdout
    child = await view.job(kids[1])
    assert [(p.id, step) for p, step in child.parents] == [(sprayed, "fan-out")]

    parent = (await eng.aenqueue(album, {"album": "waited"})).id
    await arun_due(eng, [album])
    assert (await view.job(parent)).awaited_as == "waits for"
    await arun_due(eng, [thumb])
    clock.advance(POLL_FIRST)
    await arun_due(eng, [album])
    d = await view.job(parent)
    assert d.job.state is JobState.COMPLETED and d.awaited_as == "waited for" and len(d.awaited) == 3


async def test_who_enqueued_a_job_is_one_probe_of_the_enqueue_step_index(pg_dsn: str) -> None:
    """Among 3,000 stored steps, ten of them enqueue steps, the question reads step_enqueued
    (0019), not every step."""
    setup = """insert into jobs.step (job_id, name, seq, kind, status, attempt, run, started_at, result)
               select id, 's', 1, case when n <= 10 then 'enqueue' else 'run' end, 'completed', 1, 1, now(),
                      case when n <= 10 then jsonb_build_array(gen_random_uuid()::text) else '{"ok": 1}'::jsonb end
               from (select id, row_number() over (order by id) as n from jobs.job where name = 'f.thumb') o"""
    plan = await plan_among_3000(pg_dsn, "plan-by", setup, "jobs.step", "step_enqueued_by")
    assert "step_enqueued" in plan, plan


@job(name="f.sync_spray", queue=Q, idempotency_key=lambda inp: inp["album"])
def sync_spray(ctx, inp):  # type: ignore[no-untyped-def]
    # A plain def handler: ctx.step.enqueue answers the ids without an await, from its thread.
    return ctx.step.enqueue("fan-out", [Enqueue(thumb, {"album": inp["album"], "n": n}) for n in (0, 1)])


async def test_a_sync_handler_enqueues_in_a_step_without_await(eng: Engine, driver: Driver) -> None:
    parent = (await eng.aenqueue(sync_spray, {"album": "sync"})).id
    ran = await arun_due(eng, [sync_spray])
    assert [(e.name, e.outcome) for e in ran.executions] == [("f.sync_spray", "completed")]
    kids = (await eng.aget(parent)).result
    assert [r.name for r in await driver.job_get_many(job_ids=kids)] == ["f.thumb", "f.thumb"]
    (step,) = await driver.step_load(job_id=parent)
    assert (step.kind, step.result) == ("enqueue", kids)


async def test_a_bulk_retrys_count_of_replaying_fan_ins_reads_the_wait_step_index(pg_dsn: str) -> None:
    """Among 3,000 stored steps, ten of them waits for jobs, the dry run's count of the fan-ins
    that would replay a dead answer reads step_waits (0020), not every step."""
    setup = """insert into jobs.step (job_id, name, seq, kind, status, attempt, run, started_at, result)
               select id, 's', 1, case when n <= 10 then 'jobs' else 'run' end, 'completed', 1, 1, now(),
                      case when n <= 10 then jsonb_build_array(jsonb_build_object('id', id, 'state', 'dead'))
                           else '{"ok": 1}'::jsonb end
               from (select id, row_number() over (order by id) as n from jobs.job where name = 'f.thumb') o"""
    plan = await plan_among_3000(pg_dsn, "plan-replays", setup, "jobs.step", "job_bulk_replays")
    assert "step_waits" in plan, plan
