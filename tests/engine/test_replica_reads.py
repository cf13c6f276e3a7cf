"""Every read works on a hot standby (a read replica refuses every write): `jobs-console
--read-only` and each read command of the `jobs` CLI are pointed at one, so no projection may write.

The primary is a private cluster with the schema, a job in each state, a dead letter, a worker and
a staged outbox row; the standby is its streamed base backup (EmbeddedPostgres.replica), caught up
before the reads start."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import psycopg
import pytest
from typer.testing import CliRunner

from console.source import open_source
from engine.cli import app
from engine.clock import SystemClock
from engine.drivers.postgres import PostgresDriver
from engine.ids import IdFactory
from engine.projections import JobFilter
from engine.testing import EmbeddedPostgres, install, make_job
from engine.types import JobState, WorkerRegistration

runner = CliRunner()


@pytest.fixture(scope="module")
def standby() -> Iterator[tuple[str, list[str]]]:
    """(the standby's DSN, the ids of the jobs seeded on the primary)."""
    with EmbeddedPostgres() as primary:
        dsn = primary.create_database("app")
        install(dsn)
        ids = asyncio.run(_seed(dsn))
        replica = primary.replica()
        try:
            rdsn = replica.conninfo("app")
            _caught_up(primary.conninfo("app"), rdsn)
            yield rdsn, ids
        finally:
            replica.close()


async def _seed(dsn: str) -> list[str]:
    d = PostgresDriver(dsn)
    clock = SystemClock()
    try:
        states = (JobState.READY, JobState.RUNNING, JobState.DEAD, JobState.SUSPENDED, JobState.COMPLETED)
        rows = [await make_job(d, IdFactory(clock), clock.now(), state=s, queue="billing") for s in states]
        await d.worker_register(
            worker=WorkerRegistration(id="w-1", host="h", pid=1, queues=("billing",), concurrency=2), now=clock.now()
        )
        return [r.id for r in rows]
    finally:
        await d.close()


def _caught_up(primary: str, standby: str) -> None:
    with psycopg.connect(primary, autocommit=True) as p:
        lsn = p.execute("select pg_current_wal_lsn()").fetchone()[0]  # type: ignore[index]
    with psycopg.connect(standby, autocommit=True) as s:
        assert s.execute("select pg_is_in_recovery()").fetchone() == (True,)
        s.execute("select 1")
        for _ in range(500):  # replay is asynchronous; a bounded wait on the server's own answer
            if s.execute("select pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,)).fetchone() == (True,):
                return
            s.execute("select pg_sleep(0.01)")
        raise AssertionError("the standby did not replay the primary's WAL in 5 s")


READS = (
    ("queues",),
    ("queues", "--json"),
    ("ls", "--json"),
    ("ls", "-f", "queue=billing state=dead"),
    ("dead",),
    ("dead", "--json"),
    ("why", "billing"),
    ("workers",),
    ("workers", "--json"),
    ("outbox",),
    ("outbox", "--json"),
    ("schedule",),
    ("migrate", "--status"),
)


@pytest.mark.parametrize("args", READS, ids=[" ".join(a) for a in READS])
def test_every_read_command_answers_on_a_hot_standby(standby: tuple[str, list[str]], args: tuple[str, ...]) -> None:
    dsn, _ = standby
    out = runner.invoke(app, [*args, "--dsn", dsn])
    assert out.exit_code == 0, out.output
    assert "read-only transaction" not in out.output


def test_show_and_why_of_each_job_answer_on_a_hot_standby(standby: tuple[str, list[str]]) -> None:
    dsn, ids = standby
    for job_id in ids:
        for args in (("show", job_id), ("show", job_id, "--json"), ("why", job_id)):
            out = runner.invoke(app, [*args, "--dsn", dsn])
            assert out.exit_code == 0, (args, out.output)
    shown = json.loads(runner.invoke(app, ["show", ids[2], "--json", "--dsn", dsn]).output)
    assert shown["job"]["state"] == "dead"


def test_the_read_only_console_reads_every_projection_on_a_hot_standby(standby: tuple[str, list[str]]) -> None:
    dsn, ids = standby
    source = open_source(dsn)  # a standby takes no writes: the console opens read-only by itself
    assert source.read_only and source.read_only_why == (
        "this database is a hot standby, which takes no writes: act on the primary"
    )

    async def every_read() -> None:
        try:
            queues = await source.queues()
            assert [q.name for q in queues.queues] == ["billing"]
            page = await source.jobs(JobFilter())
            assert {j.id for j in page.items} == set(ids)
            assert (await source.job(ids[2])).job.state == JobState.DEAD
            assert (await source.dead_letters(JobFilter())).total.value == 1
            assert [w.id for w in (await source.workers()).workers] == ["w-1"]
            await source.schedules()
            await source.why_job(ids[0])
            await source.why_queue("billing")
            plan = await source.plan("retry", JobFilter(state="dead"))
            assert plan.matched == 1
        finally:
            await source.engine.aclose()

    asyncio.run(every_read())


def test_a_job_filter_takes_a_state_by_its_word_and_refuses_any_other() -> None:
    from engine.errors import X_INVALID_ARGUMENT, JobsError

    assert JobFilter(state="dead") == JobFilter(state=JobState.DEAD)  # type: ignore[arg-type]
    with pytest.raises(JobsError) as err:
        JobFilter(state="daed")  # type: ignore[arg-type]
    assert err.value.code == X_INVALID_ARGUMENT and "daed" in err.value.cause


def test_an_action_on_a_hot_standby_is_x_db_read_only_naming_the_primary(standby: tuple[str, list[str]]) -> None:
    dsn, ids = standby
    out = runner.invoke(app, ["retry", ids[2], "--dsn", dsn])
    assert out.exit_code != 0, out.output
    assert "X_DB_READ_ONLY" in out.output and "PRIMARY" in out.output and "Traceback" not in out.output
