"""A worker's queues are refused at declaration when they cannot be what was meant: a string (one
name, which a sequence of letters would have served) or a queue none of its jobs uses (nothing it
claimed there could run). Leaving them out serves every queue its jobs use. A service config
nothing would read (its service off, or no @task for the scheduler) or of the wrong kind is refused."""

from __future__ import annotations

import pytest

from engine import connect, job
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.runtime.worker import Worker, WorkerConfig


@job(name="q.mail", queue="emails", idempotency_key=lambda inp: "k")
async def mail(ctx, inp):  # type: ignore[no-untyped-def]
    pass


def test_a_string_for_queues_is_refused_naming_the_sequence_it_meant() -> None:
    with pytest.raises(JobsError) as caught:
        connect("memory://").worker([mail], queues="emails")
    assert caught.value.code == X_INVALID_ARGUMENT and "a string is one name" in caught.value.cause
    assert caught.value.fix == "queues=('emails',)"
    with pytest.raises(JobsError):
        WorkerConfig(queues="emails")  # type: ignore[arg-type]


def test_a_queue_no_job_of_the_worker_uses_is_refused_naming_the_ones_they_use() -> None:
    with pytest.raises(JobsError) as caught:
        connect("memory://").worker([mail], queues=["emails", "emials"])
    assert caught.value.code == X_INVALID_ARGUMENT and "emials" in caught.value.cause and "emails" in caught.value.fix


def test_queues_left_out_are_every_queue_the_workers_jobs_use() -> None:
    eng = connect("memory://")
    w = eng.worker([mail])
    assert isinstance(w, Worker) and w.queues == ("emails",)
    assert eng.worker([mail], queues=["emails"]).queues == ("emails",)


def test_worker_config_takes_no_option_it_would_not_read() -> None:
    with pytest.raises(JobsError) as caught:
        WorkerConfig(extra={})  # type: ignore[call-arg]
    assert caught.value.code == X_INVALID_ARGUMENT and "'extra'" in caught.value.cause


def test_a_service_config_nothing_would_read_or_of_the_wrong_kind_is_refused() -> None:
    from engine.services.maintenance import MaintenanceConfig

    eng = connect("memory://")
    for options, said in (
        (
            {"maintenance": False, "maintenance_config": MaintenanceConfig()},
            "maintenance_config is given, and maintenance=False",
        ),
        ({"relay": False, "relay_config": object()}, "relay_config is given, and relay=False"),
        ({"scheduler_config": object()}, "scheduler_config is given, and no job is a @task"),
        ({"maintenance_config": "bogus"}, "a MaintenanceConfig was expected, not str"),
        ({"relay_config": "bogus"}, "a RelayConfig was expected, not str"),
    ):
        with pytest.raises(JobsError) as caught:
            eng.worker([mail], **options)
        assert caught.value.code == X_INVALID_ARGUMENT and said in caught.value.cause, options
