"""Bad input answers with the engine's error (code, cause, one-line fix) and writes nothing; a bad
handler fails its own attempt and never the worker:

- a handler raising a BaseException that is not an Exception (SystemExit, KeyboardInterrupt, an
  app's own), async or sync: the attempt fails as X_HANDLER_FAILED with the original's traceback;
  the worker goes on;
- a result that is not JSON (X_INPUT_NOT_JSON) or over the size limit (X_TOO_LARGE): dead at
  that attempt (it would be the same again), the worker goes on;
- an input, a step result or an event payload over the size limit: X_TOO_LARGE, nothing written;
- an event payload that is not a JSON object or holds a value JSON cannot hold;
- an input its job's idempotency key function cannot read (it raises): X_INVALID_ARGUMENT;
- a DSN naming another storage (redis://, nats://): X_NOT_IMPLEMENTED naming what is supported;
- `jobsctl worker` on a database without the schema or with one that is older: refused at once,
  not waited for.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from engine import connect, set_max_json_bytes
from engine.api import Engine, Enqueue
from engine.cli import app as cli_app
from engine.clock import FakeClock
from engine.codec import DEFAULT_MAX_JSON_BYTES, check_json, max_json_bytes
from engine.drivers.memory import MemoryDriver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.introspect import Introspector
from engine.jobs import job
from engine.projections import JobFilter
from engine.retry import RetryPolicy
from engine.types import JobState
from tests.engine.test_worker import Q, next_of, running
from tests.engine.test_worker_pg import ROOT


class Halt(BaseException):
    """An app's own BaseException."""


RAISED: dict[str, BaseException] = {
    "SystemExit": SystemExit("bye"),
    "KeyboardInterrupt": KeyboardInterrupt(),
    "Halt": Halt("stop everything"),
}


@job(name="bad.raises", queue=Q, idempotency_key=lambda inp: inp["k"], retry=RetryPolicy(attempts=1))
async def raises(ctx, inp):  # type: ignore[no-untyped-def]
    raise RAISED[inp["what"]]


@job(name="bad.raises_sync", queue=Q, idempotency_key=lambda inp: inp["k"], retry=RetryPolicy(attempts=1))
def raises_sync(ctx, inp):  # type: ignore[no-untyped-def]
    raise RAISED[inp["what"]]


@job(name="bad.returns", queue=Q, idempotency_key=lambda inp: inp["k"], retry=RetryPolicy(attempts=3))
async def returns(ctx, inp):  # type: ignore[no-untyped-def]
    return {"when": datetime(2026, 1, 1, tzinfo=UTC)} if inp["what"] == "datetime" else {"blob": "x" * 4096}


@job(name="bad.big_step", queue=Q, idempotency_key=lambda inp: inp["k"], retry=RetryPolicy(attempts=3))
async def big_step(ctx, inp):  # type: ignore[no-untyped-def]
    return await ctx.step.run("fetch", lambda: "x" * 4096)


@job(name="bad.fine", queue=Q, idempotency_key=lambda inp: inp["k"])
async def fine(ctx, inp):  # type: ignore[no-untyped-def]
    return "fine"


@pytest.fixture
def small_limit() -> Iterator[int]:
    before = max_json_bytes()
    set_max_json_bytes(1024)
    yield 1024
    set_max_json_bytes(before)


@pytest.fixture
def eng(clock: FakeClock) -> Engine:
    return Engine(MemoryDriver(), clock=clock, ids=IdFactory(clock, seed=11))


@pytest.mark.parametrize("handler", [raises, raises_sync], ids=["async", "sync"])
@pytest.mark.parametrize("what", sorted(RAISED))
async def test_a_handler_raising_a_base_exception_fails_its_attempt_and_the_worker_goes_on(
    eng: Engine, clock: FakeClock, handler: object, what: str
) -> None:
    async with running(eng.driver, clock, raises, raises_sync, fine) as (w, seen):  # type: ignore[arg-type]
        r = await eng.aenqueue(handler, {"k": "1", "what": what})  # type: ignore[arg-type]
        ex = await next_of(seen)
        assert (ex.job_id, ex.outcome, ex.error_code) == (r.id, "dead", "X_HANDLER_FAILED")
        assert f"raised {what}" in (ex.error or "") and "not an Exception" in (ex.error or "")
        ok = await eng.aenqueue(fine, {"k": "2"})  # the worker is still there
        assert (await next_of(seen)).job_id == ok.id
    (att,) = await eng.driver.job_attempts(job_id=r.id)
    assert att.error_code == "X_HANDLER_FAILED"
    assert f"{what}" in (att.traceback or "") and "raise RAISED" in (att.traceback or "")


@pytest.mark.parametrize(("what", "code"), [("datetime", "X_INPUT_NOT_JSON"), ("big", "X_TOO_LARGE")])
async def test_a_result_that_cannot_be_stored_makes_its_attempt_dead_and_the_worker_goes_on(
    eng: Engine, clock: FakeClock, small_limit: int, what: str, code: str
) -> None:
    async with running(eng.driver, clock, returns, fine) as (w, seen):  # type: ignore[arg-type]
        r = await eng.aenqueue(returns, {"k": "1", "what": what})
        ex = await next_of(seen)
        assert (ex.job_id, ex.outcome, ex.error_code, ex.stop_reason) == (r.id, "dead", code, "terminal")
        ok = await eng.aenqueue(fine, {"k": "2"})
        assert (await next_of(seen)).job_id == ok.id
    row = await eng.aget(r.id)
    assert (row.state, row.attempt, row.result) == (JobState.DEAD, 1, None)
    assert (row.last_error or "").startswith(f"{code}: the result of job 'bad.returns'")


async def test_a_step_result_over_the_size_limit_is_refused_and_not_stored(
    eng: Engine, clock: FakeClock, small_limit: int
) -> None:
    async with running(eng.driver, clock, big_step) as (w, seen):  # type: ignore[arg-type]
        r = await eng.aenqueue(big_step, {"k": "1"})
        ex = await next_of(seen)
        assert (ex.job_id, ex.outcome, ex.error_code) == (r.id, "dead", "X_TOO_LARGE")
    assert all(s.status != "completed" for s in await eng.driver.step_list(job_id=r.id))


async def test_an_input_or_payload_over_the_size_limit_is_refused_and_nothing_is_written(
    eng: Engine, small_limit: int
) -> None:
    with pytest.raises(JobsError) as big:
        await eng.aenqueue(fine, {"k": "1", "blob": "é" * 600})  # 1,200 bytes of UTF-8 in 600 characters
    assert big.value.code == "X_TOO_LARGE" and "over the limit of 1,024 bytes" in big.value.cause
    assert big.value.fix == "export JOBS_MAX_JSON_BYTES=2048"
    with pytest.raises(JobsError) as payload:
        await eng.asend_event("evt", {"blob": "x" * 2000})
    assert payload.value.code == "X_TOO_LARGE"
    assert not (await Introspector(eng).jobs(JobFilter())).items


async def test_an_input_its_idempotency_key_cannot_read_is_the_engines_error_and_a_batch_writes_nothing(
    eng: Engine,
) -> None:
    """The key function is the app's: on an input without the field it reads it raises (here a
    KeyError), and the caller gets the engine's error naming the job, the failure and the fields
    the input has, the original chained; enqueue_many stays all or nothing."""
    with pytest.raises(JobsError) as err:
        await eng.aenqueue_many([Enqueue(fine, {"k": "1"}), Enqueue(fine, {"key": "2", "n": 3})])
    assert err.value.code == "X_INVALID_ARGUMENT"
    assert err.value.cause == (
        "item 2 of 2: the idempotency key of job 'bad.fine' cannot be derived from this input: KeyError: 'k' "
        "(the input's fields: key, n)"
    )
    assert err.value.fix == "enqueue bad.fine with the fields its idempotency_key reads"
    assert isinstance(err.value.__cause__, KeyError)
    assert not (await Introspector(eng).jobs(JobFilter())).items


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("delay", "5"),
        ("delay", True),
        ("delay", float("inf")),
        ("delay", 1e12),
        ("run_at", "2030-01-01"),
        ("run_at", datetime(2030, 1, 1)),
        ("priority", "high"),
        ("priority", True),
        ("priority", 2**31),
    ],
)
async def test_a_bad_delay_run_at_or_priority_is_refused_and_a_batch_writes_nothing(
    eng: Engine, option: str, value: object
) -> None:
    """Each was a TypeError, an OverflowError, an AttributeError, or (a priority) stored by the
    memory driver and refused by PostgreSQL's integer column: now the engine's error naming it."""
    with pytest.raises(JobsError) as err:
        await eng.aenqueue_many([Enqueue(fine, {"k": "1"}), Enqueue(fine, {"k": "2"}, **{option: value})])
    assert err.value.code == "X_INVALID_ARGUMENT" and err.value.cause.startswith(f"item 2 of 2: {option}={value!r}")
    assert err.value.fix
    assert not (await Introspector(eng).jobs(JobFilter())).items


def test_a_declaration_refuses_what_the_worker_could_not_keep() -> None:
    """A retry that is not a RetryPolicy failed only at the first failure, in the worker's failure
    path; an infinite timeout or a priority past the column, and a RateLimit mistyped, likewise
    later or never: each is refused where it is written."""
    from engine.jobs import RateLimit

    def declared(**kw: object) -> JobsError:
        with pytest.raises(JobsError) as err:
            job(name="bad.decl", queue=Q, idempotency_key=lambda inp: "k", **kw)(fine.fn)  # type: ignore[arg-type]
        assert err.value.code == "X_INVALID_DEFINITION" and err.value.fix
        return err.value

    assert "not a RetryPolicy" in declared(retry=3).cause
    assert "finite" in declared(timeout=float("inf")).cause
    assert "32-bit" in declared(priority=2**40).cause
    assert "32-bit" in declared(concurrency=2**40).cause
    for kw, says in (
        ({"limit": 10, "period": 60}, "did you mean 'per'"),
        ({"limit": 10, "per": float("inf")}, "finite"),
        ({"limit": True, "per": 1}, "whole limit"),
        ({"limit": 10, "per": 1, "key": 5}, "not a function"),
    ):
        with pytest.raises(JobsError) as err:
            RateLimit(**kw)  # type: ignore[arg-type]
        assert err.value.code == "X_INVALID_DEFINITION" and says in err.value.cause and err.value.fix


def test_the_size_limit_is_one_mebibyte_unless_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    assert DEFAULT_MAX_JSON_BYTES == 1_048_576
    check_json({"blob": "x" * 1000})
    with pytest.raises(JobsError) as bad:
        set_max_json_bytes(0)
    assert bad.value.code == "X_INVALID_ARGUMENT"


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ("not an object", "X_INVALID_ARGUMENT"),
        (["a", "list"], "X_INVALID_ARGUMENT"),
        ({"when": datetime(2026, 1, 1, tzinfo=UTC)}, "X_INPUT_NOT_JSON"),
        ({"n": float("nan")}, "X_INPUT_NOT_JSON"),
        ({"s": {1, 2}}, "X_INPUT_NOT_JSON"),
    ],
)
async def test_an_event_payload_that_is_not_a_json_object_is_refused(eng: Engine, payload: object, code: str) -> None:
    with pytest.raises(JobsError) as bad:
        await eng.asend_event("evt", payload)  # type: ignore[arg-type]
    assert bad.value.code == code and bad.value.fix


def test_an_event_payload_that_is_not_json_on_the_cli_is_the_engines_error() -> None:
    r = CliRunner().invoke(cli_app, ["event", "evt", "--payload", "{not json", "--dsn", "memory://"])
    assert r.exit_code == 1 and "error X_INVALID_ARGUMENT: --payload is not JSON" in r.stderr


@pytest.mark.parametrize("dsn", ["redis://localhost:6379/0", "nats://localhost:4222", "rediss://cache"])
def test_a_dsn_naming_another_storage_is_not_implemented_and_says_what_is(dsn: str) -> None:
    with pytest.raises(JobsError) as bad:
        connect(dsn)
    assert bad.value.code == "X_NOT_IMPLEMENTED"
    assert "postgresql://" in bad.value.cause and "memory://" in bad.value.cause
    assert bad.value.fix == "export JOBS_DSN=postgresql://USER@HOST:5432/DBNAME"
    r = CliRunner().invoke(cli_app, ["ls", "--dsn", dsn])
    assert r.exit_code == 1 and "error X_NOT_IMPLEMENTED:" in r.stderr and "Traceback" not in r.stderr
    m = CliRunner().invoke(cli_app, ["migrate", "--dsn", dsn])
    assert m.exit_code == 1 and "error X_NOT_IMPLEMENTED:" in m.stderr


def _worker(dsn: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from engine.cli import main; main()", "worker", "tests.engine.test_worker_app"]
        + ["--dsn", dsn],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_worker_on_a_database_without_the_schema_is_refused_at_once(pg_server_empty_dsn: str) -> None:
    out = _worker(pg_server_empty_dsn)
    assert out.returncode == 1 and "error X_SCHEMA_MISSING:" in out.stderr
    assert "fix: jobsctl migrate" in out.stderr and "Traceback" not in out.stderr
    assert "waiting-for-database" not in out.stderr


def test_a_worker_on_an_older_schema_is_refused_at_once(pg_server_empty_dsn: str) -> None:
    from engine.schema import migrate

    migrate(pg_server_empty_dsn, target=7)
    out = _worker(pg_server_empty_dsn)
    assert out.returncode == 1 and "error X_SCHEMA_OUTDATED:" in out.stderr and "0008_" in out.stderr
    assert "fix: jobsctl migrate" in out.stderr and "Traceback" not in out.stderr
