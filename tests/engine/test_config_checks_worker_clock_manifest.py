"""Bad input refused where it is given, as the engine's clear error (code, cause, fix): a worker's
id and hooks when the worker is built, a FakeClock's start, what describe_jobs is handed, and a
queue name no `jobsctl worker --queues` could name."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.errors import X_INVALID_ARGUMENT, X_INVALID_DEFINITION, X_NOT_A_JOB, JobsError
from engine.jobs import Registry, describe_jobs, job
from engine.runtime.metrics import Metrics
from engine.runtime.worker import Worker
from engine.runtime.worker_config import WorkerConfig
from engine.tasks import task


async def _handler(ctx: Any, inp: Any) -> None:
    return None


HANDLE = job(name="checks.one", idempotency_key=lambda inp: "k")(_handler)


def _refused(code: str, fn: Callable[[], Any], *said: str) -> JobsError:
    with pytest.raises(JobsError) as info:
        fn()
    err = info.value
    assert err.code == code, err
    for text in said:
        assert text in err.cause or text in err.fix, err
    return err


@pytest.mark.parametrize("bad", [5, "", " web-1", "web-1 ", "web\n1", "web\x1b1", "w" * 201, b"web-1"])
def test_a_worker_id_that_is_not_a_name_an_operator_can_type_back_is_refused(bad: object) -> None:
    err = _refused(X_INVALID_ARGUMENT, lambda: WorkerConfig(id=bad), "worker option id")  # type: ignore[arg-type]
    assert err.fix == "eng.worker(jobs, id='web-1')"


def test_a_worker_id_of_a_plain_name_or_none_is_taken() -> None:
    assert WorkerConfig(id="web-1").id == "web-1" and WorkerConfig(id="w" * 200).id == "w" * 200
    assert WorkerConfig().id is None


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [("on_execution", 5, "not callable"), ("metrics", object(), "not a Metrics"), ("metrics", "m", "not a Metrics")],
)
def test_a_worker_built_directly_refuses_hooks_it_could_not_call(option: str, value: object, said: str) -> None:
    def build() -> Worker:
        return Worker(MemoryDriver(), Registry([HANDLE]), **{option: value})

    err = _refused(X_INVALID_ARGUMENT, build, f"worker option {option}=", said)
    assert err.fix.startswith("eng.worker(jobs, ")


def test_a_worker_built_directly_takes_a_callable_on_execution_and_a_metrics() -> None:
    w = Worker(MemoryDriver(), Registry([HANDLE]), on_execution=print, metrics=Metrics())
    assert w.on_execution is print


@pytest.mark.parametrize("start", [datetime(2026, 1, 1), "2026-01-01", 0])
def test_a_fake_clock_refuses_a_start_that_is_not_an_aware_datetime(start: object) -> None:
    err = _refused(X_INVALID_ARGUMENT, lambda: FakeClock(start), "FakeClock start=")  # type: ignore[arg-type]
    assert err.fix == "FakeClock(datetime(2026, 1, 1, tzinfo=UTC))"


def test_a_fake_clock_starts_at_the_aware_datetime_it_is_given() -> None:
    at = datetime(2026, 3, 1, tzinfo=UTC)
    assert FakeClock(at).now() == at and FakeClock().now().utcoffset() is not None


def test_describe_jobs_takes_one_handle_as_the_worker_does() -> None:
    assert describe_jobs(HANDLE) == describe_jobs([HANDLE]) == describe_jobs(Registry([HANDLE]))  # type: ignore[arg-type]
    assert describe_jobs(h for h in [HANDLE]) == describe_jobs([HANDLE])


def test_describe_jobs_refuses_what_is_not_a_job_handle_with_the_engines_error() -> None:
    _refused(X_NOT_A_JOB, lambda: describe_jobs([1]), "1 is not a job handle")  # type: ignore[list-item]
    err = _refused(X_INVALID_ARGUMENT, lambda: describe_jobs(5), "describe_jobs cannot describe 5")  # type: ignore[arg-type]
    assert err.fix.startswith("describe_jobs(")


@pytest.mark.parametrize("declare", ["job", "task"])
def test_a_queue_name_with_a_comma_is_refused_at_declaration(declare: str) -> None:
    def make() -> Any:
        if declare == "job":
            return job(name="checks.comma", queue="mail,sms", idempotency_key=lambda inp: "k")(_handler)
        return task(name="checks.comma_task", cron="0 * * * *", queue="mail,sms")(_handler)

    err = _refused(X_INVALID_DEFINITION, make, "'mail,sms' holds a comma", "--queues a,b")
    assert "queue=" in err.fix


def test_a_queue_name_without_a_comma_is_still_taken() -> None:
    assert job(name="checks.dots", queue="mail.sms-1", idempotency_key=lambda inp: "k")(_handler).queue == "mail.sms-1"
