"""The database roles README.md lists (sql/roles/roles.sql): a login role granted `jobs_reader`
runs `jobs-console --read-only` and every read command, and PostgreSQL itself refuses it every
action, which the engine reports as X_PERMISSION_DENIED with the grant that fixes it; a login
role granted `jobs_writer` runs applications, workers (maintenance, relay, scheduler) and every
operator action. Both on a private cluster: roles are the cluster's, not a database's."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from typer.testing import CliRunner

from engine.actions import Operator
from engine.api import connect
from engine.cli import app
from engine.errors import X_PERMISSION_DENIED, JobsError
from engine.introspect import Introspector
from engine.jobs import job
from engine.projections import JobFilter
from engine.testing import EmbeddedPostgres, Factory, install
from engine.types import JobState
from tests.engine.test_replica_reads import READS

ROOT = Path(__file__).resolve().parents[2]
ROLES = ROOT / "sql" / "roles" / "roles.sql"
_DATABASES = itertools.count()
runner = CliRunner()


@job(name="roles.step", queue="roles", idempotency_key=lambda inp: str(inp["n"]))
async def stepped(ctx: Any, inp: dict[str, Any]) -> int:
    return await ctx.step.run("double", lambda: inp["n"] * 2)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddedPostgres]:
    """A private cluster holding the two group roles and a login in each."""
    with EmbeddedPostgres() as pg:
        with psycopg.connect(pg.conninfo(), autocommit=True) as conn:
            conn.execute("create role oncall login")
            conn.execute("create role shop login")
        yield pg


@pytest.fixture
def cluster(server: EmbeddedPostgres) -> Iterator[tuple[str, str, str]]:
    """(the owner's DSN, a jobs_reader login's, a jobs_writer login's), over a fresh installed
    database whose owner ran sql/roles/roles.sql."""
    name = f"app_{next(_DATABASES)}"
    owner = server.create_database(name)
    install(owner)
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute("drop role if exists jobs_reader, jobs_writer")  # roles are the cluster's
        conn.execute(ROLES.read_text())
        conn.execute("grant jobs_reader to oncall")
        conn.execute("grant jobs_writer to shop")
    yield owner, make_conninfo(owner, user="oncall"), make_conninfo(owner, user="shop")
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute("drop owned by jobs_reader, jobs_writer")
    server.drop_database(name)


def test_the_readme_lists_the_grants_the_tests_run() -> None:
    readme = (ROOT / "README.md").read_text()
    for statement in (s.strip() for s in ROLES.read_text().split(";")):
        lines = [line for line in statement.splitlines() if line and not line.startswith("--")]
        if lines:
            assert "\n".join(lines) + ";" in readme, f"README.md lacks: {lines}"


def _seed(owner: str) -> dict[str, str]:
    async def go() -> dict[str, str]:
        eng = connect(owner)
        try:
            f = Factory.of(eng)
            dead = await f.job(JobState.DEAD, name="roles.step", queue="roles", input={"n": 1})
            ready = await f.job(JobState.READY, name="roles.step", queue="roles", input={"n": 2})
            await f.worker("w-1", host="h", pid=1, queues=("roles",), concurrency=1)
            return {"dead": dead.id, "ready": ready.id}
        finally:
            await eng.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("args", READS, ids=[" ".join(a) for a in READS])
def test_a_jobs_reader_login_runs_every_read_command(cluster: tuple[str, str, str], args: tuple[str, ...]) -> None:
    owner, reader, _ = cluster
    _seed(owner)
    args = tuple("roles" if a == "billing" else a for a in args)  # this module's queue
    out = runner.invoke(app, [*args, "--dsn", reader])
    assert out.exit_code == 0, out.output


def test_postgres_refuses_a_jobs_reader_every_action_as_x_permission_denied(cluster: tuple[str, str, str]) -> None:
    owner, reader, _ = cluster
    ids = _seed(owner)

    async def each_action() -> list[str]:
        eng = connect(reader)
        ops = Operator(eng, actor="oncall", read_only=False)  # the engine lets it through: the server refuses
        calls = [
            lambda: ops.retry(ids["dead"]),
            lambda: ops.discard(ids["dead"]),
            lambda: ops.cancel(ids["ready"]),
            lambda: ops.pause("roles"),
            lambda: ops.send_event("roles.approved", {"ok": True}),
            lambda: ops.drain_worker("w-1"),
            lambda: ops.bulk("retry", JobFilter(state=JobState.DEAD)),
            lambda: eng.aenqueue(stepped, {"n": 1}),
        ]
        codes = []
        try:
            for call in calls:
                with pytest.raises(JobsError) as err:
                    await call()
                assert "permission denied" in err.value.cause and err.value.fix == "GRANT jobs_writer TO oncall"
                codes.append(err.value.code)
        finally:
            await eng.aclose()
        return codes

    assert asyncio.run(each_action()) == [X_PERMISSION_DENIED] * 8
    out = runner.invoke(app, ["retry", ids["dead"], "--dsn", reader])
    assert out.exit_code != 0 and "X_PERMISSION_DENIED" in out.output and "GRANT jobs_writer TO oncall" in out.output
    assert "Traceback" not in out.output


def test_the_console_opens_read_only_for_a_role_that_may_not_act_and_says_why(cluster: tuple[str, str, str]) -> None:
    """A jobs_reader login's console offered every action and each then failed: it now opens
    read-only, saying which grant would let it act; the owner's and a writer's open read-write."""
    from console.source import open_source

    owner, reader, writer = cluster
    for dsn, why in (
        (reader, "role 'oncall' may read jobs but not change them: GRANT jobs_writer TO oncall"),
        (writer, None),
        (owner, None),
    ):
        source = open_source(dsn)
        assert (source.read_only, source.read_only_why) == (why is not None, why)


def test_a_jobs_writer_login_runs_an_app_a_worker_and_every_action(cluster: tuple[str, str, str]) -> None:
    owner, _, writer = cluster
    ids = _seed(owner)

    async def run() -> None:
        eng = connect(writer)
        done: asyncio.Queue[Any] = asyncio.Queue()
        try:
            async with await psycopg.AsyncConnection.connect(writer) as app_conn:
                async with app_conn.transaction():
                    await eng.astage(app_conn, stepped, {"n": 21})
            async with eng.worker([stepped], queues=["roles"], concurrency=2, on_execution=done.put_nowait):
                ran = [await asyncio.wait_for(done.get(), timeout=20) for _ in range(2)]  # seeded + staged
            assert [ex.outcome for ex in ran] == ["completed", "completed"]
            page = await Introspector(eng).jobs(JobFilter(name="roles.step", state=JobState.COMPLETED))
            assert sorted([(await eng.aget(j.id)).result for j in page.items]) == [4, 42]
            ops = Operator(eng, actor="shop", read_only=False)
            await ops.retry(ids["dead"])
            await ops.pause("roles")
            await ops.resume("roles")
            await ops.send_event("roles.approved", {"ok": True})
            await ops.drain_worker("w-1")
        finally:
            await eng.aclose()

    asyncio.run(run())


def test_no_grant_in_the_roles_file_names_a_table_directly() -> None:
    """ALL TABLES and default privileges: a migration that adds a table needs no new grant."""
    text = ROLES.read_text()
    assert not re.search(r"\bon (table )?jobs\.\w+", text)
