"""jobs: a durable background-job engine on PostgreSQL. The public API only.

Each public name is imported from its module on first use (PEP 562's module ``__getattr__``):
importing a submodule runs this file first, and a worker process (``engine.runtime.worker``,
``engine.drivers.postgres``) needs none of the facade behind ``connect`` (engine.api).
``from engine import connect, job`` and ``from engine import *`` resolve the names here.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.api import Engine, Enqueue, connect
    from engine.clock import Clock, FakeClock, SystemClock
    from engine.codec import set_max_json_bytes
    from engine.errors import JobsError, register_error_codes
    from engine.jobs import JobDefinition, RateLimit, Registry, describe_jobs, job
    from engine.retry import RetryPolicy, register_error_retry, retry_schedule
    from engine.tasks import TaskDefinition, task
    from engine.types import JobState

    JobError = JobsError  # the name DESIGN.md sketches

# Each public name -> the module that defines it (JobError: JobsError's other name).
_HOMES = {
    "Engine": ("engine.api", "Engine"),
    "Enqueue": ("engine.api", "Enqueue"),
    "connect": ("engine.api", "connect"),
    "Clock": ("engine.clock", "Clock"),
    "FakeClock": ("engine.clock", "FakeClock"),
    "SystemClock": ("engine.clock", "SystemClock"),
    "set_max_json_bytes": ("engine.codec", "set_max_json_bytes"),
    "JobsError": ("engine.errors", "JobsError"),
    "JobError": ("engine.errors", "JobsError"),  # the name DESIGN.md sketches
    "register_error_codes": ("engine.errors", "register_error_codes"),
    "JobDefinition": ("engine.jobs", "JobDefinition"),
    "RateLimit": ("engine.jobs", "RateLimit"),
    "Registry": ("engine.jobs", "Registry"),
    "describe_jobs": ("engine.jobs", "describe_jobs"),
    "job": ("engine.jobs", "job"),
    "RetryPolicy": ("engine.retry", "RetryPolicy"),
    "register_error_retry": ("engine.retry", "register_error_retry"),
    "retry_schedule": ("engine.retry", "retry_schedule"),
    "TaskDefinition": ("engine.tasks", "TaskDefinition"),
    "task": ("engine.tasks", "task"),
    "JobState": ("engine.types", "JobState"),
}

__all__ = [
    "Clock",
    "Engine",
    "Enqueue",
    "FakeClock",
    "JobDefinition",
    "JobError",
    "JobState",
    "JobsError",
    "RateLimit",
    "Registry",
    "RetryPolicy",
    "SystemClock",
    "TaskDefinition",
    "connect",
    "describe_jobs",
    "job",
    "register_error_codes",
    "register_error_retry",
    "retry_schedule",
    "set_max_json_bytes",
    "task",
]


if not TYPE_CHECKING:  # type checkers read the imports above, and flag a name that is not there

    def __getattr__(name: str) -> Any:
        """A public name, imported from its module on first use and kept here after."""
        try:
            module, attr = _HOMES[name]
        except KeyError:
            raise AttributeError(f"module 'engine' has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(__all__))
