"""A worker's presence on real PostgreSQL: a session-level advisory lock the server frees the
moment the worker's session ends. A SIGKILLed `jobsctl worker`'s job is re-delivered within about
one presence interval of the kill (the bound asserted: 2 s), not after its 30 s lease; a session
the server terminated is a gone worker too, and the worker takes its presence again; after a
server restart no worker is judged until it holds its presence again."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import psycopg

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.postgres import PostgresDriver
from engine.ids import IdFactory
from engine.jobs import Registry
from engine.runtime.worker import Worker, WorkerConfig
from engine.testing import EmbeddedPostgres
from engine.types import JobState, NewJob, WorkerRegistration
from tests.engine import test_worker_app as app
from tests.engine.test_worker_pg import Seen, _line, _spawn

LEASE = 30.0


async def _setup(driver: PostgresDriver, ids: IdFactory, clock: FakeClock, wid: str) -> str:
    await driver.worker_register(
        worker=WorkerRegistration(id=wid, host="h", pid=1, queues=("default",), concurrency=4), now=clock.now()
    )
    await driver.worker_presence_hold(id=wid)
    jid = ids.new()
    await driver.job_enqueue(jobs=[NewJob(jid, "send_email", "default", f"k:{jid}", {}, 3)], now=clock.now())
    await driver.worker_claim(queues=["default"], limit=1, worker=wid, now=clock.now(), lease_seconds=LEASE)
    return jid


async def test_a_session_the_server_ended_is_a_gone_worker_that_takes_its_presence_again(
    pg_dsn: str, ids: IdFactory, clock: FakeClock
) -> None:
    d = PostgresDriver(pg_dsn)
    try:
        await d.open()
        jid = await _setup(d, ids, clock, "w1")
        pid = d._presence["w1"].info.backend_pid
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute("select pg_terminate_backend(%s, 5000)", [pid])  # waits until it is gone
        await d.queue_wait(queues=["default"], timeout=0.01)  # subscribed (the enqueue's NOTIFY taken)
        waiting = asyncio.ensure_future(d.queue_wait(queues=["default"], timeout=10))
        await asyncio.sleep(0)
        (orphan,) = await d.job_rescue_orphaned(workers=await d.worker_gone(), now=clock.now(), limit=10)
        assert (orphan.job_id, orphan.worker, orphan.state) == (jid, "w1", JobState.READY)
        assert await asyncio.wait_for(waiting, 5)  # the job made ready wakes its queue's idle workers
        await d.worker_presence_hold(id="w1")  # its check finds the session gone, and takes it again
        assert d._presence["w1"].info.backend_pid != pid
        await d.worker_claim(queues=["default"], limit=1, worker="w1", now=clock.now(), lease_seconds=LEASE)
        assert await d.job_rescue_orphaned(workers=await d.worker_gone(), now=clock.now(), limit=10) == []
    finally:
        await d.close()


async def test_after_a_server_restart_no_worker_is_judged_until_it_holds_its_presence_again(
    pg_dsn: str, pg_cluster: EmbeddedPostgres, ids: IdFactory, clock: FakeClock
) -> None:
    d = PostgresDriver(pg_dsn)
    try:
        await d.open()
        jid = await _setup(d, ids, clock, "w1")
        await asyncio.to_thread(pg_cluster.restart)  # every lock is gone; the worker may be alive
        for _ in range(2):
            try:
                assert await d.job_rescue_orphaned(workers=await d.worker_gone(), now=clock.now(), limit=10) == []
                break
            except Exception:  # the pool's connections died with the server: the next is new
                continue
        row = await d.job_get(job_id=jid)
        assert row is not None and row.state is JobState.RUNNING
        await d.worker_presence_hold(id="w1")  # taken again, noted with the new lifetime
        assert await d.job_rescue_orphaned(workers=await d.worker_gone(), now=clock.now(), limit=10) == []
        await d.worker_presence_release(id="w1")
        assert [
            o.job_id for o in await d.job_rescue_orphaned(workers=await d.worker_gone(), now=clock.now(), limit=10)
        ] == [jid]
    finally:
        await d.close()


async def test_a_sigkilled_workers_job_is_redelivered_within_two_seconds_not_its_lease(
    pg_dsn: str, tmp_path: Path
) -> None:
    """`jobsctl worker` with the default 30 s lease runs a job that blocks; SIGKILL; a second worker
    (default presence interval, 0.5 s) runs it again. Measured: from the kill to the job's start on
    the survivor."""
    eng = Engine(PostgresDriver(pg_dsn))
    proc = _spawn(
        pg_dsn, "--concurrency", "1", "--no-maintenance", env={"JOBS_TEST_BLOCK": "1"}, log=tmp_path / "k.log"
    )
    seen = Seen()
    d = PostgresDriver(pg_dsn)
    survivor = Worker(
        d,
        Registry([app.pg_block]),
        config=WorkerConfig(queues=(app.QUEUE,), concurrency=1, lease_seconds=LEASE),
        on_execution=seen.of("survivor"),
    )
    try:
        r = await eng.aenqueue(app.pg_block, {"n": 1})
        assert await _line(proc, "STARTED ") == f"STARTED {r.id}"
        ticked = asyncio.Event()
        rescue_once = survivor.presence.rescue_once

        async def rescue_and_tell() -> object:
            out = await rescue_once()
            ticked.set()
            return out

        survivor.presence.rescue_once = rescue_and_tell  # type: ignore[method-assign]
        async with survivor:
            await ticked.wait()  # the kill lands just after the survivor's look: the worst case
            killed_at = time.monotonic()
            proc.send_signal(signal.SIGKILL)
            await seen.until(lambda: r.id in seen.final(), timeout=LEASE)
            took = time.monotonic() - killed_at
        print(f"re-delivered and completed {took:.3f} s after the SIGKILL (lease {LEASE:g} s)")
        assert took < 2.0, f"the job was re-delivered {took:.2f} s after the kill"
        row = await eng.aget(r.id)
        assert (row.state, row.attempt, row.run) == (JobState.COMPLETED, 2, 2)
        atts = await eng.driver.job_attempts(job_id=r.id)
        assert [a.outcome for a in atts] == ["lost", "completed"]
        (lost,) = [h for h in await eng.driver.job_history(job_id=r.id) if h.kind == "lease_lost"]
        assert lost.data["why"] == "worker-gone"
    finally:
        if proc.poll() is None:
            proc.kill()
        await d.close()
        await eng.aclose()
