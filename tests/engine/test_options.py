"""Every options object (RetryPolicy, RateLimit, WorkerConfig, MaintenanceConfig, RelayConfig,
SchedulerConfig) answers a mistyped keyword with the engine's error and "did you mean", where the
dataclass's own __init__ raised a TypeError naming no option and no fix; and a number of seconds
that never ends (a lease, an interval, a retention) is refused where it is written."""

from __future__ import annotations

from typing import Any

import pytest

from engine.errors import JobsError
from engine.jobs import RateLimit
from engine.retry import RetryPolicy
from engine.runtime.worker_config import WorkerConfig
from engine.services.maintenance import MaintenanceConfig
from engine.services.relay import RelayConfig
from engine.services.scheduler import SchedulerConfig

MISTYPED = [
    (RetryPolicy, "max_attempts", "attempts", "X_INVALID_DEFINITION", "RetryPolicy(attempts=...)"),
    (RateLimit, "period", "per", "X_INVALID_DEFINITION", "RateLimit(per=...)"),
    (WorkerConfig, "concurency", "concurrency", "X_INVALID_ARGUMENT", "eng.worker(jobs, concurrency=...)"),
    (MaintenanceConfig, "retentoin", "retention", "X_INVALID_ARGUMENT", "MaintenanceConfig(retention=...)"),
    (RelayConfig, "batchsize", "batch_size", "X_INVALID_ARGUMENT", "RelayConfig(batch_size=...)"),
    (SchedulerConfig, "intervall", "interval", "X_INVALID_ARGUMENT", "SchedulerConfig(interval=...)"),
]


@pytest.mark.parametrize(("cls", "typed", "meant", "code", "fix"), MISTYPED, ids=[m[0].__name__ for m in MISTYPED])
def test_a_mistyped_option_names_the_option_it_meant(cls: Any, typed: str, meant: str, code: str, fix: str) -> None:
    extra = {"limit": 1, "per": 1.0} if cls is RateLimit else {}
    with pytest.raises(JobsError) as err:
        cls(**extra, **{typed: 1})
    assert err.value.code == code and f"did you mean {meant!r}" in err.value.cause and err.value.fix == fix


@pytest.mark.parametrize(
    ("cls", "option"),
    [
        (WorkerConfig, "lease_seconds"),
        (WorkerConfig, "poll_interval"),
        (MaintenanceConfig, "interval"),
        (MaintenanceConfig, "retention"),
        (RelayConfig, "poll_interval"),
        (SchedulerConfig, "leader_lease"),
        (RetryPolicy, "max_delay"),
    ],
)
def test_a_number_of_seconds_that_never_ends_is_refused(cls: Any, option: str) -> None:
    with pytest.raises(JobsError) as err:
        cls(**{option: float("inf")})
    assert f"{option}=inf" in err.value.cause and err.value.fix


def test_options_objects_still_copy_pickle_and_replace() -> None:
    import copy
    import dataclasses
    import pickle

    policy = RetryPolicy(attempts=4, jitter=0.1)
    assert pickle.loads(pickle.dumps(policy)) == policy and copy.deepcopy(policy) == policy
    assert dataclasses.replace(WorkerConfig(concurrency=3), batch_size=5).batch_size == 5
    assert RetryPolicy(3).attempts == 3  # positional, as a dataclass takes it
