"""OpenTelemetry tracing (engine/tracing.py): a run joins the trace of the code that enqueued or
staged it, through the context stored with the job (jobs.job.trace, jobs.outbox.trace). On both
drivers, the spans recorded by the SDK's in-memory exporter on a provider of the test's own."""

from __future__ import annotations

import builtins
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from engine.api import Engine, Enqueue, connect
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.ids import IdFactory
from engine.jobs import job
from engine.retry import RetryPolicy
from engine.services.relay import Relay
from engine.testing import arun_due
from engine.tracing import Tracing, trace_id
from tests.contract.test_outbox import app_tx

Q = "traced-q"
SEEN: dict[str, Any] = {}


@job(name="t.greet", queue=Q, idempotency_key=lambda inp: inp["k"])
async def greet(ctx, inp):  # type: ignore[no-untyped-def]
    # The handler's own span (on the test's provider): a child of the run's when the run's span is current here.
    with SEEN["provider"].get_tracer("app").start_as_current_span("inside greet"):
        return inp["k"]


@job(name="t.sync_greet", queue=Q, idempotency_key=lambda inp: inp["k"])
def sync_greet(ctx, inp):  # type: ignore[no-untyped-def]
    SEEN["thread_span"] = trace.get_current_span().get_span_context()
    return inp["k"]


@job(name="t.fail", queue=Q, idempotency_key=lambda inp: inp["k"], retry=RetryPolicy(attempts=1))
async def fail(ctx, inp):  # type: ignore[no-untyped-def]
    raise RuntimeError("card declined")


@job(name="t.steps", queue=Q, idempotency_key=lambda inp: inp["k"], retry=RetryPolicy(attempts=2, delay=0))
async def steps(ctx, inp):  # type: ignore[no-untyped-def]
    await ctx.step.run("charge", lambda: "charged")  # a sync step body: in a thread
    SEEN["runs"] = SEEN.get("runs", 0) + 1

    async def notify() -> str:
        if SEEN["runs"] == 1:
            raise RuntimeError("mail server down")
        return "sent"

    return await ctx.step.run("notify", notify)


@job(name="t.fan", queue=Q, idempotency_key=lambda inp: inp["k"])
async def fan(ctx, inp):  # type: ignore[no-untyped-def]
    return await ctx.step.enqueue("greets", [Enqueue(greet, {"k": f"{inp['k']}-{n}"}) for n in range(2)])


ALL = [greet, sync_greet, fail, steps, fan]


@pytest.fixture
def spans() -> Iterator[tuple[InMemorySpanExporter, TracerProvider]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    SEEN["provider"] = provider
    yield exporter, provider
    provider.shutdown()


@pytest.fixture
def eng(driver: Driver, clock: FakeClock, spans: tuple[InMemorySpanExporter, TracerProvider]) -> Engine:
    return Engine(driver, clock=clock, ids=IdFactory(clock, seed=5), tracing=Tracing(tracer_provider=spans[1]))


def _named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


async def test_a_run_joins_the_trace_of_the_code_that_enqueued_it(
    eng: Engine, spans: tuple[InMemorySpanExporter, TracerProvider]
) -> None:
    exporter, provider = spans
    with provider.get_tracer("app").start_as_current_span("POST /greet") as request:
        r = await eng.aenqueue(greet, {"k": "a"})
    stored = (await eng.aget(r.id)).trace
    assert stored is not None and trace_id(stored) == format(request.get_span_context().trace_id, "032x")

    await arun_due(eng, ALL)
    (send,) = _named(exporter, "send t.greet")
    (run,) = _named(exporter, "process t.greet")
    (inner,) = _named(exporter, "inside greet")
    assert send.kind is SpanKind.PRODUCER and send.parent is not None
    assert send.parent.span_id == request.get_span_context().span_id
    assert run.kind is SpanKind.CONSUMER
    assert run.context.trace_id == request.get_span_context().trace_id
    assert run.parent is not None and run.parent.span_id == send.context.span_id
    assert inner.parent is not None and inner.parent.span_id == run.context.span_id
    attrs = dict(run.attributes or {})
    assert attrs["messaging.system"] == "jobs"
    assert attrs["messaging.destination.name"] == Q
    assert attrs["messaging.message.id"] == r.id
    assert attrs["jobs.outcome"] == "completed" and attrs["jobs.attempt"] == 1
    # the settled row keeps its context: the console and `jobsctl show` can name its trace
    assert (await eng.aget(r.id)).trace == stored


async def test_a_batch_is_one_send_span_and_every_job_of_it_carries_its_context(
    eng: Engine, spans: tuple[InMemorySpanExporter, TracerProvider]
) -> None:
    exporter, _ = spans
    got = await eng.aenqueue_many([Enqueue(greet, {"k": f"b{n}"}) for n in range(300)])  # two chunks
    (send,) = _named(exporter, "send t.greet")
    assert dict(send.attributes or {})["messaging.batch.message_count"] == 300
    want = format(send.context.trace_id, "032x")
    for r in (got[0], got[-1]):
        assert trace_id((await eng.aget(r.id)).trace) == want


async def test_a_staged_job_runs_in_the_stagers_trace_after_the_relay_publishes_it(
    eng: Engine, spans: tuple[InMemorySpanExporter, TracerProvider], driver: Driver
) -> None:
    exporter, provider = spans
    with provider.get_tracer("app").start_as_current_span("checkout") as request:
        async with app_tx(driver) as tx:
            (staged,) = await eng.astage_many(tx, [Enqueue(greet, {"k": "s"})])
    published = await Relay(driver, eng.clock).run_once()
    assert published.published == (staged.id,)
    ran = await arun_due(eng, ALL)
    assert [ex.name for ex in ran.executions] == ["t.greet"]
    (run,) = _named(exporter, "process t.greet")
    assert run.context.trace_id == request.get_span_context().trace_id
    (send,) = _named(exporter, "send t.greet")
    assert run.parent is not None and run.parent.span_id == send.context.span_id


async def test_a_failed_run_is_an_error_span_with_its_code_and_a_sync_handler_sees_its_span(
    eng: Engine, spans: tuple[InMemorySpanExporter, TracerProvider], caplog: pytest.LogCaptureFixture
) -> None:
    exporter, _ = spans
    caplog.set_level("INFO", logger="jobs")
    await eng.aenqueue(fail, {"k": "f"})
    await eng.aenqueue(sync_greet, {"k": "s"})
    await arun_due(eng, ALL)
    (failed,) = _named(exporter, "process t.fail")
    assert failed.status.status_code is StatusCode.ERROR
    attrs = dict(failed.attributes or {})
    assert attrs["jobs.outcome"] == "dead" and attrs["jobs.stop_reason"] == "attempts-exhausted"
    assert attrs["error.type"]
    # its log line joins its trace: the run's trace and span ids beside the event's fields
    (line,) = [r for r in caplog.records if r.getMessage() == "jobs.attempt.failed"]
    fields = line.fields  # type: ignore[attr-defined]
    assert fields["trace_id"] == format(failed.context.trace_id, "032x")
    assert fields["span_id"] == format(failed.context.span_id, "016x") and fields["job_id"]
    (synced,) = _named(exporter, "process t.sync_greet")
    assert SEEN["thread_span"].span_id == synced.context.span_id  # current in the handler's thread


async def test_each_step_that_runs_is_a_child_span_of_its_run_and_a_replayed_step_is_none(
    eng: Engine, spans: tuple[InMemorySpanExporter, TracerProvider], clock: FakeClock
) -> None:
    exporter, _ = spans
    SEEN["runs"] = 0
    await eng.aenqueue(steps, {"k": "s"})
    await arun_due(eng, ALL)  # attempt 1: charge runs, notify fails
    clock.advance(1)
    await arun_due(eng, ALL)  # attempt 2: charge replays its stored result, notify runs
    first, second = sorted(_named(exporter, "process t.steps"), key=lambda s: s.start_time or 0)
    (charge,) = _named(exporter, "step charge")
    failed, sent = sorted(_named(exporter, "step notify"), key=lambda s: s.start_time or 0)
    assert charge.parent is not None and charge.parent.span_id == first.context.span_id
    assert failed.parent is not None and failed.parent.span_id == first.context.span_id
    assert failed.status.status_code is StatusCode.ERROR and first.status.status_code is StatusCode.ERROR
    assert sent.parent is not None and sent.parent.span_id == second.context.span_id
    assert dict(sent.attributes or {})["jobs.step.seq"] == 2
    assert dict(second.attributes or {})["jobs.outcome"] == "completed"


async def test_a_job_enqueued_without_a_context_starts_a_trace_of_its_own(
    driver: Driver, clock: FakeClock, spans: tuple[InMemorySpanExporter, TracerProvider]
) -> None:
    exporter, provider = spans
    plain = Engine(driver, clock=clock, ids=IdFactory(clock, seed=6))  # enqueues without tracing
    r = await plain.aenqueue(greet, {"k": "p"})
    assert (await plain.aget(r.id)).trace is None
    traced = Engine(driver, clock=clock, ids=IdFactory(clock, seed=7), tracing=Tracing(tracer_provider=provider))
    with provider.get_tracer("app").start_as_current_span("the test's own span"):
        await arun_due(traced, ALL)  # the worker's task holds this span; the run must not take it as parent
    (run,) = _named(exporter, "process t.greet")
    assert run.parent is None


def test_tracing_without_opentelemetry_installed_is_refused_with_the_install_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = builtins.__import__

    def no_otel(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ImportError(f"No module named {name!r}")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_otel)
    with pytest.raises(JobsError) as err:
        connect("memory://", tracing=True)
    assert err.value.code == X_INVALID_ARGUMENT
    assert "opentelemetry-api" in err.value.cause and "pip install opentelemetry-api" in err.value.fix
    with pytest.raises(JobsError) as bad:
        connect("memory://", tracing="yes")
    assert bad.value.code == X_INVALID_ARGUMENT and "tracing='yes'" in bad.value.cause


def test_an_engine_without_tracing_writes_no_context_and_imports_no_opentelemetry() -> None:
    code = (
        "import sys\n"
        "from engine.api import connect\n"
        "from engine.jobs import job\n"
        "greet = job(name='t.plain', queue='q', idempotency_key=lambda inp: inp['k'])(lambda ctx, inp: None)\n"
        "eng = connect('memory://')\n"
        "r = eng.enqueue(greet, {'k': 'x'})\n"
        "assert eng.get(r.id).trace is None\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
        "eng.close()\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_jobs_worker_tracing_flag_is_refused_without_opentelemetry(tmp_path: Path) -> None:
    blocker = tmp_path / "opentelemetry"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError('opentelemetry is not installed here')\n")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{root}", "JOBS_TRACING": "1"}
    out = subprocess.run(
        [sys.executable, "-c", "from engine.cli import main; main()", "worker", "tests.engine.test_worker_app"]
        + ["--dsn", "memory://"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert "X_INVALID_ARGUMENT" in out.stderr and "pip install opentelemetry-api" in out.stderr


async def test_a_steps_fan_out_is_a_send_span_of_its_run_and_its_jobs_run_in_that_trace(
    eng: Engine, spans: tuple[InMemorySpanExporter, TracerProvider]
) -> None:
    exporter, _ = spans
    parent = (await eng.aenqueue(fan, {"k": "f"})).id
    await arun_due(eng, ALL)
    (run,) = _named(exporter, "process t.fan")
    sends = _named(exporter, "send t.greet")
    (send,) = [s for s in sends if s.parent is not None and s.parent.span_id == run.context.span_id]
    assert dict(send.attributes or {})["messaging.batch.message_count"] == 2
    kids = (await eng.aget(parent)).result
    assert len(kids) == 2
    runs = {dict(s.attributes or {})["messaging.message.id"]: s for s in _named(exporter, "process t.greet")}
    for kid in kids:
        assert runs[kid].context.trace_id == run.context.trace_id
        assert runs[kid].parent is not None and runs[kid].parent.span_id == send.context.span_id


async def test_jobsctl_worker_tracing_reaches_the_jobs_its_runs_enqueue(
    spans: tuple[InMemorySpanExporter, TracerProvider], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`jobsctl worker --tracing`: the engine its handlers enqueue through (ctx.engine, a step's
    fan-out) traces as the worker does, so those jobs run in the trace of the run that enqueued them."""
    from engine.cli import worker as cli
    from engine.drivers.memory import MemoryDriver
    from engine.jobs import Registry
    from engine.runtime import logs

    monkeypatch.setattr(logs, "configure_json_logging", lambda: None)  # the test's log capture stays
    exporter, provider = spans
    mem = MemoryDriver()
    parent = (await Engine(mem).aenqueue(fan, {"k": "cli"})).id
    options: dict[str, Any] = {"queues": (Q,), "burst": True, "tracing": Tracing(tracer_provider=provider)}
    assert await cli._serve(mem, Registry(ALL), options, None, False, None, "127.0.0.1", False) == 0
    (run,) = _named(exporter, "process t.fan")
    (send,) = [s for s in _named(exporter, "send t.greet") if s.parent and s.parent.span_id == run.context.span_id]
    kids = (await Engine(mem).aget(parent)).result
    runs = {dict(s.attributes or {})["messaging.message.id"]: s for s in _named(exporter, "process t.greet")}
    assert sorted(runs) == sorted(kids) and {s.context.trace_id for s in runs.values()} == {run.context.trace_id}
