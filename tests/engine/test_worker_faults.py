"""A worker under the database's faults at start-up, and what its log stream says meanwhile.

- Started while the server is down, `jobsctl worker` waits with backoff, logging each retry as
  `jobs.worker.waiting-for-database`, and serves once the server is up; `--start-timeout` bounds
  the wait with the engine's error, never a traceback.
- A start whose connections the server terminates (a real AdminShutdown, mid schema check) is
  retried, not fatal.
- Every line of a worker's stderr is a JSON event, the connection pool's messages included
  (`jobs.pool.*`), through a server stop and its connections' termination.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import time
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from engine.api import Engine
from engine.drivers import postgres as pg_package
from engine.drivers.postgres import PostgresDriver
from engine.drivers.postgres.pool import SESSIONS_ENDED
from engine.drivers.postgres.pool import log as pool_log
from engine.runtime import logs
from engine.runtime.worker import Worker, WorkerConfig
from engine.testing import EmbeddedPostgres
from tests.engine import test_worker_app as app
from tests.engine.test_worker_pg import ROOT

NOWHERE = "host=/nonexistent-socket-dir dbname=nothing user=nobody"


class WorkerProcess:
    """`jobsctl worker tests.engine.test_worker_app` (or another long-running ``command``) with both
    pipes read line by line."""

    def __init__(self, dsn: str, *args: str, command: tuple[str, ...] = ("worker", app.__name__)) -> None:
        cmd = [sys.executable, "-c", "from engine.cli import main; main()", *command, "--dsn", dsn]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "JOBS_TEST_FAST": "1"}
        self.proc = subprocess.Popen(
            [*cmd, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.stderr: list[str] = []

    async def out(self, prefix: str) -> str:
        assert self.proc.stdout is not None
        while True:
            line = await asyncio.wait_for(asyncio.to_thread(self.proc.stdout.readline), 60)
            if not line:
                raise AssertionError(f"the worker exited before printing {prefix!r}: {self.rest()}")
            if line.startswith(prefix):
                return line.strip()

    async def event(self, name: str) -> dict[str, Any]:
        """The next stderr line whose event starts with ``name`` (every line read is kept)."""
        assert self.proc.stderr is not None
        while True:
            line = await asyncio.wait_for(asyncio.to_thread(self.proc.stderr.readline), 60)
            if not line:
                raise AssertionError(f"the worker exited before logging {name!r}: {''.join(self.stderr)}")
            self.stderr.append(line)
            body = json.loads(line)  # a line that is not JSON fails here, naming itself
            if str(body.get("event", "")).startswith(name):
                return body  # type: ignore[no-any-return]

    def rest(self) -> str:
        assert self.proc.stderr is not None
        self.stderr.append(self.proc.stderr.read())
        return "".join(self.stderr)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


def _end_sessions(dsn: str) -> None:
    parts = conninfo_to_dict(dsn)
    admin = psycopg.conninfo.make_conninfo(dsn, dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(  # each gone when the statement returns
            "select pg_terminate_backend(pid, 5000) from pg_stat_activity where datname = %s", [parts["dbname"]]
        )


async def test_a_worker_started_while_the_server_is_down_waits_for_it_and_logs_only_json(
    pg_dsn: str, pg_cluster: EmbeddedPostgres
) -> None:
    await asyncio.to_thread(pg_cluster.stop)
    w = WorkerProcess(pg_dsn, "--poll-interval", "0.2", "--maintenance-interval", "0.2")
    eng = Engine(PostgresDriver(pg_dsn))
    try:
        first = await w.event(logs.WORKER_WAITING_FOR_DATABASE)
        second = await w.event(logs.WORKER_WAITING_FOR_DATABASE)
        assert (first["attempt"], second["attempt"]) == (1, 2)
        assert second["retry_in"] > first["retry_in"]  # backoff
        assert "could not connect" in first["error"]
        await asyncio.to_thread(pg_cluster.start)
        await w.out("jobsctl worker ")
        started = await w.event(logs.WORKER_STARTED)
        r = await eng.aenqueue(app.pg_work, {"n": 1})
        assert await w.out("STARTED ") == f"STARTED {r.id}"
        # Its connections terminated under it: the pool's own messages are JSON events too.
        await asyncio.to_thread(_end_sessions, pg_dsn)
        # A claim in flight as its session ended says so first (its pipeline could not be ended),
        # then the pool drops the connection; a checkout that finds its connection ended while
        # idle says the loop's were reopened.
        seen: list[str] = []
        ends = (logs.POOL_CONNECTION_DISCARDED, logs.POOL_CONNECT_FAILED, logs.POOL_SESSIONS_ENDED)
        while not seen or seen[-1] not in ends:
            pool_event = await w.event("jobs.pool.")
            seen.append(pool_event["event"])
            assert pool_event["logger"] in ("psycopg", "psycopg.pool", "engine.pool") and pool_event["message"]
            assert seen[-1] != logs.POOL_MESSAGE, seen  # every message of this fault has a stable name
        w.proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(w.proc.wait, 30) == 0
        rest = w.rest().splitlines()
        assert all(json.loads(line)["event"].startswith("jobs.") for line in rest if line), rest
        assert started["worker"]
    finally:
        w.kill()
        await eng.aclose()


def test_a_worker_gives_up_starting_after_start_timeout_with_the_engines_error() -> None:
    began = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", "from engine.cli import main; main()", "worker", app.__name__]
        + ["--dsn", NOWHERE, "--start-timeout", "1"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    took = time.monotonic() - began
    assert out.returncode == 1
    lines = out.stderr.splitlines()
    waits = [json.loads(line) for line in lines if line.startswith("{")]
    assert waits and all(w["event"] == logs.WORKER_WAITING_FOR_DATABASE for w in waits)
    assert "error X_DB_UNREACHABLE:" in out.stderr and "start_timeout 1 s" in out.stderr
    assert "fix: check the server is up" in out.stderr and "Traceback" not in out.stderr
    assert 0.5 < took < 20


def test_start_timeout_must_be_positive() -> None:
    with pytest.raises(Exception) as bad:
        WorkerConfig(start_timeout=0)
    assert getattr(bad.value, "code", None) == "X_INVALID_ARGUMENT"


async def test_a_start_whose_connections_were_ended_reopens_them_and_starts_without_a_wait(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    terminated: list[int] = []
    check = pg_package.check_current

    async def ended_before_each_check(dsn: str, one: Any, all_: Any) -> None:
        async def one_after_an_end(query: Any, params: Any) -> Any:
            if len(terminated) < 2:  # the server ends every session of the database before the statement
                terminated.append(1)
                await asyncio.to_thread(_end_sessions, pg_dsn)
            return await one(query, params)

        await check(dsn, one_after_an_end, all_)

    d = PostgresDriver(pg_dsn)
    await d.open()  # its connections are open, idle, when the server ends them
    monkeypatch.setattr(pg_package, "check_current", ended_before_each_check)
    caplog.set_level(logging.INFO, logger="jobs")
    pool_log, ended = logging.getLogger("engine.pool"), _Lines()  # its own handler: JSON logging may not propagate it
    pool_log.addHandler(ended)
    w = Worker(d, app_registry(), config=WorkerConfig(queues=(app.QUEUE,), poll_interval=0.2))
    try:
        await asyncio.wait_for(w.start(), 60)
        said = [r.getMessage() for r in caplog.records]
        assert len(terminated) == 2 and said.count(logs.WORKER_WAITING_FOR_DATABASE) == 0
        assert len(ended.lines) == 2 and "(terminating connection due to administrator command)" in ended.lines[0]
        assert said.count(logs.WORKER_STARTED) == 1
    finally:
        pool_log.removeHandler(ended)
        await w.drain()
        await d.close()


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def app_registry() -> Any:
    from engine.jobs import Registry

    return Registry.from_module(app)


def test_the_pools_messages_are_json_events_with_stable_names(capsys: pytest.CaptureFixture[str]) -> None:
    logs.configure_json_logging()
    pool = logging.getLogger("psycopg.pool")
    pool.warning("error connecting in %r: %s", "jobs", "connection refused")
    pool.warning("discarding closed connection: %s", "<psycopg.AsyncConnection [BAD] at 0x1>")
    pool.warning("reconnection attempt in pool %r failed after %s sec", "jobs", 300)
    logging.getLogger("psycopg").warning(
        "error ignored terminating %r: %s", "<psycopg.AsyncPipeline [BAD] at 0x1>", "the connection is lost"
    )
    pool.info("connection requested from %r", "jobs")  # the pool's chatter stays off
    logging.getLogger("psycopg").warning("some other warning")
    pool_log.warning(SESSIONS_ENDED, "terminating connection due to administrator command")
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [(b["event"], b["level"], b["logger"]) for b in lines] == [
        (logs.POOL_CONNECT_FAILED, "warning", "psycopg.pool"),
        (logs.POOL_CONNECTION_DISCARDED, "warning", "psycopg.pool"),
        (logs.POOL_RECONNECT_GAVE_UP, "warning", "psycopg.pool"),
        (logs.POOL_PIPELINE_LOST, "warning", "psycopg"),
        (logs.POOL_MESSAGE, "warning", "psycopg"),
        (logs.POOL_SESSIONS_ENDED, "warning", "engine.pool"),
    ]
    assert lines[0]["message"] == "error connecting in 'jobs': connection refused"


@pytest.mark.parametrize(
    "command,banner",
    [(("relay",), "jobsctl relay "), (("scheduler", "tests.engine.test_scheduler_app"), "jobsctl scheduler ")],
    ids=["relay", "scheduler"],
)
async def test_a_relay_or_scheduler_started_while_the_server_is_down_waits_for_it(
    pg_dsn: str, pg_cluster: EmbeddedPostgres, command: tuple[str, ...], banner: str
) -> None:
    await asyncio.to_thread(pg_cluster.stop)
    p = WorkerProcess(pg_dsn, command=command)
    try:
        first = await p.event(logs.WORKER_WAITING_FOR_DATABASE)
        second = await p.event(logs.WORKER_WAITING_FOR_DATABASE)
        assert (first["attempt"], second["attempt"]) == (1, 2) and second["retry_in"] > first["retry_in"]
        await asyncio.to_thread(pg_cluster.start)
        await p.out(banner)
        p.proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(p.proc.wait, 30) == 0
    finally:
        p.kill()


@pytest.mark.parametrize(
    "command", [("relay",), ("scheduler", "tests.engine.test_scheduler_app")], ids=["relay", "scheduler"]
)
def test_a_relay_or_scheduler_gives_up_after_start_timeout_and_a_signal_while_waiting_exits_0(
    command: tuple[str, ...],
) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from engine.cli import main; main()",
            *command,
            "--dsn",
            NOWHERE,
            "--start-timeout",
            "1",
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1 and "X_DB_UNREACHABLE" in out.stderr and "start_timeout 1 s" in out.stderr
    p = WorkerProcess(NOWHERE, command=command)
    try:
        asyncio.run(p.event(logs.WORKER_WAITING_FOR_DATABASE))
        p.proc.send_signal(signal.SIGTERM)
        assert p.proc.wait(30) == 0
    finally:
        p.kill()
