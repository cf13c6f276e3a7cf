"""A claim that fails for another reason than a lost connection (a statement the database refuses,
a bug in the claim path) is said as what it is: `jobs.worker.error` (what: claim) with its code,
counted in jobs_worker_errors_total{what,code}, the worker not ready until a claim lands; retried
with the same capped backoff. A lost connection keeps `jobs.worker.reconnecting`."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import psycopg
import pytest

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.drivers.postgres import PostgresDriver
from engine.errors import X_PERMISSION_DENIED, ConnectionLost, JobsError
from engine.ids import IdFactory
from engine.jobs import Registry
from engine.runtime.worker import Worker
from tests.engine.test_worker import cfg, fast, next_of, running


def _events(caplog: pytest.LogCaptureFixture) -> list[tuple[str, dict[str, Any]]]:
    return [(r.getMessage(), getattr(r, "fields", {})) for r in caplog.records if r.name == "jobs"]


def _reconnecting_claims(caplog: pytest.LogCaptureFixture) -> int:
    return sum(1 for e, f in _events(caplog) if e == "jobs.worker.reconnecting" and f.get("what") == "claim")


class Logged(logging.Handler):
    """Sets ``seen`` once the event ``name`` is logged (the worker logs on its own loop)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name_, self.seen = name, asyncio.Event()
        logging.getLogger("jobs").addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == self.name_:
            self.seen.set()


class FailingClaims:
    """The memory driver's claim, failing with each of ``errors`` in turn, then the real one; the
    first real claim waits for ``resume`` so the test reads the worker while the failures hold."""

    def __init__(self, mem: MemoryDriver, errors: list[Exception]) -> None:
        self.real, self.errors = mem.worker_claim, list(errors)
        self.failed_all, self.resume = asyncio.Event(), asyncio.Event()
        mem.worker_claim = self  # type: ignore[method-assign]

    async def __call__(self, **kw: Any) -> Any:
        if self.errors:
            raise self.errors.pop(0)
        self.failed_all.set()
        await self.resume.wait()
        return await self.real(**kw)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (
            JobsError(
                X_PERMISSION_DENIED,
                cause="the database refused role 'app': permission denied for table job",
                fix="GRANT jobs_writer TO app",
            ),
            X_PERMISSION_DENIED,
        ),
        (TypeError("worker_claim() got an unexpected keyword argument 'after'"), "TypeError"),
    ],
)
async def test_a_claim_error_that_is_not_a_lost_connection_is_logged_counted_and_makes_the_worker_not_ready(
    clock: FakeClock, caplog: pytest.LogCaptureFixture, error: Exception, code: str
) -> None:
    caplog.set_level(logging.INFO, logger="jobs")
    mem = MemoryDriver()
    eng = Engine(mem, clock=clock, ids=IdFactory(clock, seed=5))
    claims = FailingClaims(mem, [error, error])
    async with running(mem, clock, fast) as (w, seen):
        await claims.failed_all.wait()
        ok, why = w.health.ready()
        assert not ok and why.startswith(f"its claims fail, retried ({code}: ")
        failed = [f for e, f in _events(caplog) if e == "jobs.worker.error"]
        assert [(f["what"], f["code"], f["failures"]) for f in failed] == [("claim", code, 1), ("claim", code, 2)]
        assert failed[0]["error"] in str(error) and failed[0].get("fix") == getattr(error, "fix", None)
        assert w.metrics.registry.get_sample_value("jobs_worker_errors_total", {"what": "claim", "code": code}) == 2
        assert w.metrics.registry.get_sample_value("jobs_worker_reconnects_total", {"what": "claim"}) is None
        assert _reconnecting_claims(caplog) == 0
        claims.resume.set()  # the cause is gone (a GRANT, a migration): the next claim lands
        r = await eng.aenqueue(fast, {"n": 1})
        assert (await next_of(seen)).job_id == r.id
        assert w.health.ready() == (True, "registered and heartbeating")
        assert ("jobs.worker.recovered", {"what": "claim", "worker": w.id, "failures": 2}) in _events(caplog)


async def test_a_lost_connection_under_a_claim_still_reconnects_and_leaves_readiness_to_the_heartbeats(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobs")
    mem = MemoryDriver()
    claims = FailingClaims(mem, [ConnectionLost("the connection to the database failed: server closed it")])
    async with running(mem, clock, fast) as (w, _):
        await claims.failed_all.wait()
        assert w.health.ready()[0]
        events = [e for e, _ in _events(caplog)]
        assert "jobs.worker.reconnecting" in events and "jobs.worker.error" not in events
        assert w.metrics.registry.get_sample_value("jobs_worker_reconnects_total", {"what": "claim"}) == 1
        claims.resume.set()
    assert ("jobs.worker.reconnected", {"what": "claim", "worker": w.id}) in _events(caplog)


async def test_a_claim_the_schema_cannot_answer_on_postgres_is_a_claim_failure_until_the_column_is_back(
    pg_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobs")
    d = PostgresDriver(pg_dsn)
    eng = Engine(PostgresDriver(pg_dsn))
    seen: asyncio.Queue[Any] = asyncio.Queue()
    w = Worker(d, Registry([fast]), config=cfg(poll_interval=0.2), on_execution=seen.put_nowait)
    try:
        async with w:
            with psycopg.connect(pg_dsn, autocommit=True) as conn:  # the schema behind what the claim reads
                conn.execute("alter table jobs.queue rename column paused to paused_gone")
                failed = Logged("jobs.worker.error")
                try:
                    await failed.seen.wait()
                finally:
                    logging.getLogger("jobs").removeHandler(failed)
                ok, why = w.health.ready()
                assert not ok and "UndefinedColumn" in why and "paused" in why
                fields = next(f for e, f in _events(caplog) if e == "jobs.worker.error")
                assert (fields["what"], fields["code"], fields["sqlstate"]) == ("claim", "UndefinedColumn", "42703")
                assert _reconnecting_claims(caplog) == 0
                conn.execute("alter table jobs.queue rename column paused_gone to paused")
            r = await eng.aenqueue(fast, {"n": 7})
            assert (await asyncio.wait_for(seen.get(), timeout=30)).job_id == r.id  # a safety net
            assert w.health.ready()[0]
            errors = w.metrics.registry.get_sample_value(
                "jobs_worker_errors_total", {"what": "claim", "code": "UndefinedColumn"}
            )
            assert errors is not None and errors >= 1
    finally:
        await d.close()
        await eng.aclose()
