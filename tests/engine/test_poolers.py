"""Behind a pooler in transaction mode (PgBouncer), each transaction may reach another server
session: the engine then prepares no statement (``prepared_statements=False``, ``jobsctl worker
--no-prepared-statements``), and a connection that prepared through one anyway fails with an error
that names the pooler. The suite has no pooler: these pin what the engine sends and how it reads
the server's and the pooler's refusals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from engine import Enqueue, connect, job
from engine.drivers.postgres import PostgresDriver
from engine.drivers.postgres.dsn import unreachable
from engine.errors import X_DB_UNREACHABLE, X_POOLER_PREPARED, ConnectionLost, JobsError

ROOT = Path(__file__).resolve().parents[2]


@job(name="pooler.hello", queue="pooler", idempotency_key=lambda inp: str(inp["n"]))
async def hello(ctx, inp):  # type: ignore[no-untyped-def]
    return inp


async def _prepared_on_the_lead(driver: PostgresDriver) -> int:
    async with driver.pools.connection() as conn:  # a caller alone: the lead, which ran every call
        row = await (await conn.execute("select count(*) as n from pg_prepared_statements", prepare=False)).fetchone()
    return int(row["n"])  # type: ignore[index]


@pytest.mark.parametrize("prepared", [True, False])
async def test_with_prepared_statements_off_no_statement_is_prepared(pg_dsn: str, prepared: bool) -> None:
    eng = connect(pg_dsn, prepared_statements=prepared)
    try:
        for n in range(3):  # past any threshold: the hot statements run again and again
            await eng.aenqueue(hello, {"n": n})
            await eng.aenqueue_many([Enqueue(hello, {"n": 10 * n + k}) for k in range(10, 13)])
            await eng.aget((await eng.aenqueue(hello, {"n": n})).id)
        count = await _prepared_on_the_lead(eng.driver)  # type: ignore[arg-type]
        assert (count > 0) is prepared
    finally:
        await eng.aclose()


async def test_a_prepared_statement_met_in_another_session_names_the_pooler(pg_dsn: str) -> None:
    driver = PostgresDriver(pg_dsn)
    await driver.open()
    try:
        for sqlstate, said in (
            ("42P05", 'prepared statement "_pg3_0" already exists'),
            ("26000", 'prepared statement "_pg3_3" does not exist'),
        ):
            with pytest.raises(JobsError) as err:
                async with driver._connection() as conn:  # the server's own error, as a pooler relays it
                    await conn.execute(f"do $$ begin raise exception '{said}' using errcode = '{sqlstate}'; end $$")
            assert err.value.code == X_POOLER_PREPARED and said in err.value.cause
            assert err.value.fix == (
                "connect(dsn, prepared_statements=False); for jobs and jobs-console: export JOBS_NO_PREPARED_STATEMENTS=1"
            )
    finally:
        await driver.close()


def test_a_pooler_that_refuses_startup_options_is_told_apart_from_an_outage() -> None:
    refused = psycopg.OperationalError(
        'connection failed: connection to server on socket "/run/pgb/.s.PGSQL.6432" failed: '
        "FATAL:  unsupported startup parameter: options"
    )
    err = unreachable("host=/run/pgb port=6432 dbname=app", refused)
    assert err.code == X_DB_UNREACHABLE and not isinstance(err, ConnectionLost)  # retrying would not help
    assert "takes no statement timeout at connection start" in err.cause and "--statement-timeout 0" in err.fix
    down = unreachable("host=/run/pg dbname=app", psycopg.OperationalError("connection refused"))
    assert isinstance(down, ConnectionLost)


@pytest.mark.parametrize(
    "command",
    [("worker", "tests.engine.test_poolers"), ("relay",), ("scheduler", "tests.engine.test_scheduler_app")],
    ids=["worker", "relay", "scheduler"],
)
def test_each_long_running_command_passes_no_prepared_statements_to_its_driver(command: tuple[str, ...]) -> None:
    # The memory driver prepares nothing and takes no driver option: it refuses this one by name.
    out = subprocess.run(
        [sys.executable, "-c", "from engine.cli import main; main()", *command]
        + ["--dsn", "memory://", "--no-prepared-statements"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "error X_INVALID_ARGUMENT: the memory driver takes no options, got prepared_statements" in out.stderr


REFUSED = "the memory driver takes no options, got prepared_statements"
MEM = ["--dsn", "memory://"]


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--no-prepared-statements", "queues", "--dsn", "memory://"], {}),
        (["ls", "--dsn", "memory://"], {"JOBS_NO_PREPARED_STATEMENTS": "1"}),
        (["--no-prepared-statements", "backfill", "--status", "--app", "tests.engine.backfill_app"] + MEM, {}),
        (["worker", "tests.engine.test_poolers", "--dsn", "memory://"], {"JOBS_NO_PREPARED_STATEMENTS": "true"}),
    ],
    ids=["root-flag-read", "env-read", "root-flag-backfill", "env-worker"],
)
def test_the_root_flag_and_the_environment_reach_every_commands_driver(args: list[str], env: dict[str, str]) -> None:
    # One setting for a deployment behind a transaction pooler: the one-shot reads and actions
    # too, not only the long-running commands. The memory driver refuses the option by name.
    from typer.testing import CliRunner

    from engine.cli import app

    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code != 0 and REFUSED in result.output, result.output


def test_without_the_setting_no_command_passes_the_option() -> None:
    from typer.testing import CliRunner

    from engine.cli import app

    result = CliRunner().invoke(app, ["queues", "--dsn", "memory://"], env={"JOBS_NO_PREPARED_STATEMENTS": ""})
    assert result.exit_code == 0 and REFUSED not in result.output, result.output


def test_the_console_takes_the_setting_and_the_demo_refuses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    import console.cli as console_cli

    seen: list[bool] = []

    def opening(dsn: str, opts: console_cli.Options) -> None:
        seen.append(opts.prepared_statements)
        raise JobsError(X_DB_UNREACHABLE, cause="not opened by this test", fix="-")

    monkeypatch.setattr(console_cli, "open_source", opening)
    for env, prepared in (({"JOBS_NO_PREPARED_STATEMENTS": "1"}, False), ({}, True)):
        CliRunner().invoke(console_cli.app, ["--dsn", "host=/nowhere dbname=x"], env=env)
        assert seen.pop() is prepared
    demo = CliRunner().invoke(console_cli.app, ["--no-prepared-statements", "demo"])
    assert demo.exit_code != 0
    assert "error X_INVALID_ARGUMENT: --no-prepared-statements (or $JOBS_NO_PREPARED_STATEMENTS)" in demo.output
    assert "fix: unset JOBS_NO_PREPARED_STATEMENTS; jobs-console demo" in demo.output


def test_a_console_opened_without_prepared_statements_reads_without_preparing_any(pg_dsn: str) -> None:
    import asyncio

    from console.source import open_source
    from engine.projections import JobFilter

    source = open_source(pg_dsn, prepared_statements=False)

    async def reads() -> int:
        try:
            for _ in range(3):  # past psycopg's threshold
                await source.queues()
                await source.jobs(JobFilter())
                await source.workers()
            return await _prepared_on_the_lead(source.engine.driver)  # type: ignore[arg-type]
        finally:
            await source.engine.aclose()

    assert asyncio.run(reads()) == 0, "no statement prepared"


def test_jobs_migrate_prepares_no_statement_so_the_setting_holds_for_it_too(
    pg_server_empty_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `jobsctl --no-prepared-statements migrate`: migrate's own connection never prepares (each of its
    # statements runs once or a few times), so the root setting is kept there without a flag.
    from typer.testing import CliRunner

    from engine.cli import app
    from engine.drivers.postgres import migrate as pg_migrate

    opened: list[psycopg.Connection] = []  # type: ignore[type-arg]
    real = pg_migrate.psycopg.connect

    def spying(*args: object, **kwargs: object) -> psycopg.Connection:  # type: ignore[type-arg]
        conn = real(*args, **kwargs)  # type: ignore[arg-type]
        opened.append(conn)
        return conn

    monkeypatch.setattr(pg_migrate.psycopg, "connect", spying)
    done = CliRunner().invoke(app, ["--no-prepared-statements", "migrate", "--dsn", pg_server_empty_dsn])
    assert done.exit_code == 0, done.output
    assert opened and all(conn.prepare_threshold is None for conn in opened)


@pytest.mark.parametrize(
    ("command", "refused"),
    [
        (["worker", "tests.engine.test_poolers"], True),
        (["relay"], True),
        (["scheduler", "tests.engine.test_scheduler_app"], True),
        (["worker", "tests.engine.test_scheduler_app", "--no-scheduler"], True),
        (["worker", "tests.engine.test_scheduler_app", "--burst"], False),  # its own cron tasks' runs
    ],
    ids=["worker", "relay", "scheduler", "worker-no-scheduler", "worker-with-its-cron-tasks"],
)
def test_a_long_running_command_on_memory_is_refused_unless_it_makes_its_own_work(
    command: list[str], refused: bool
) -> None:
    # memory:// is the process's own store: nothing another process enqueues or stages reaches it.
    out = subprocess.run(
        [sys.executable, "-c", "from engine.cli import main; main()", *command, "--dsn", "memory://"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    said = "process's own store: no other process can enqueue or stage into it, so it would wait for ever"
    if refused:
        assert (
            out.returncode == 2 and "error X_DSN_INVALID: memory:// is the" in out.stderr and said in out.stderr
        )  # usage
        assert (
            f"fix: jobsctl {' '.join(command[:2]) if command[0] != 'relay' else 'relay'} --dsn postgresql://"
            in out.stderr
        )
    else:
        assert out.returncode == 0 and "X_DSN_INVALID" not in out.stderr, out.stderr
