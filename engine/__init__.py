"""jobs: a durable background-job engine on PostgreSQL. The public API only."""

from engine.api import Engine, Enqueue, connect
from engine.clock import Clock, FakeClock, SystemClock
from engine.codec import set_max_json_bytes
from engine.errors import JobsError, register_error_codes
from engine.jobs import JobDefinition, RateLimit, Registry, describe_jobs, job
from engine.retry import RetryPolicy, register_error_retry, retry_schedule
from engine.tasks import TaskDefinition, task
from engine.types import JobState

JobError = JobsError  # the name DESIGN.md sketches

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
