"""Cron tasks: ``@task(name=..., cron=..., timezone=..., catch_up=...)`` over a handler.

A task is a job (it registers, runs and retries like one) whose occurrences the scheduler
enqueues. Its idempotency key is not the author's to write: an occurrence is keyed by the task
name and its scheduled instant in UTC (I21), and the handler reads that instant from its input:

    {"task": "nightly_report", "scheduled_for": "2026-03-29T00:00:00Z", "trigger": "cron", "input": ...}

``trigger`` is "manual" for an operator's `jobsctl schedule trigger`; ``input`` is the declared
fixed ``input=`` (None by default). Everything is checked at declaration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, ClassVar

from engine.codec import check_json_text
from engine.errors import X_DUPLICATE_JOB, X_INVALID_DEFINITION, JobsError, unknown_option
from engine.jobs import DEFAULT_QUEUE, Handler, JobDefinition, check_name, job
from engine.options import INT32, int32
from engine.retry import RetryPolicy
from engine.schedule import CATCH_UP, DEFAULT_MAX_CATCH_UP, CatchUp, Cron, parse_cron

_OPTIONS = (
    "name",
    "cron",
    "timezone",
    "catch_up",
    "max_catch_up",
    "input",
    "queue",
    "retry",
    "timeout",
    "step_timeout",
    "priority",
)
# name -> where it was declared (module.qualname): a second declaration elsewhere is refused.
_DECLARED: dict[str, str] = {}


@dataclass(frozen=True, eq=False)
class TaskDefinition(JobDefinition):
    is_task: ClassVar[bool] = True

    cron: Cron
    catch_up: CatchUp
    max_catch_up: int
    fixed_input: Any
    input_text: str  # the fixed input as stored JSON text


def _occurrence_key(name: str) -> Callable[[Any], str]:
    def key(inp: Any) -> str:
        when = inp.get("scheduled_for") if isinstance(inp, dict) else None
        if not isinstance(when, str) or not _instant(when):
            raise JobsError(
                X_INVALID_DEFINITION,
                cause=f"task {name!r} was enqueued with {inp!r:.200}, which names no scheduled_for instant "
                "(ISO 8601 with its zone, as 2026-03-29T00:00:00Z)",
                fix=f"jobsctl schedule trigger {name}",
            )
        return f"{name}@{when}"

    return key


def _instant(text: str) -> bool:
    """Whether ``text`` spells an instant (ISO 8601 with its zone), as an occurrence's is."""
    try:
        return datetime.fromisoformat(text).utcoffset() is not None
    except ValueError:
        return False


def _check_task_name(name: object) -> str:
    """A job's name rule (engine.jobs.check_name), and no '@': an occurrence's key is name@instant."""
    fix = "@task(name='nightly_report', cron='0 2 * * *')"
    checked = check_name(name, "task name", fix)
    if "@" in checked:
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"task name {checked!r} holds '@', which its occurrence keys (name@instant) use",
            fix=fix,
        )
    return checked


def task(
    name: str | None = None,
    *,
    cron: str | None = None,
    timezone: str = "UTC",
    catch_up: str = "skip",
    max_catch_up: int | None = None,
    input: Any = None,
    queue: str = DEFAULT_QUEUE,
    retry: RetryPolicy | None = None,
    timeout: float | None = None,
    step_timeout: float | None = None,
    priority: int = 0,
    **unknown: Any,
) -> Callable[[Handler], TaskDefinition]:
    """Declare a cron task over a handler ``(ctx, inp)``; see the module docstring for ``inp``."""
    if callable(name):  # @task over a def, without its (...): the def came as the name
        fn_name = getattr(name, "__name__", "handler")
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"@task was used without (...) over {fn_name!r}: a task needs at least its cron expression",
            fix=f"@task(name={fn_name!r}, cron='0 2 * * *')",
        )
    label = name or "<unnamed>"
    if unknown:
        raise unknown_option(
            f"task {label!r} declares unknown option",
            unknown,
            _OPTIONS,
            f"@task(name={label!r}, {{option}}=...)",
            "cron",
        )
    if name is not None:
        _check_task_name(name)
    spec = parse_cron(cron, timezone, task=label)
    if catch_up not in CATCH_UP:
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"task {label!r} declares catch_up={catch_up!r}; the policies are {', '.join(CATCH_UP)}",
            fix=f"@task(name={label!r}, cron={spec.expr!r}, catch_up='skip')",
        )
    if max_catch_up is not None:
        if catch_up != "all":
            raise JobsError(
                X_INVALID_DEFINITION,
                cause=f"task {label!r} declares max_catch_up={max_catch_up!r} with catch_up={catch_up!r},"
                " which enqueues at most one missed occurrence: the bound would do nothing",
                fix=f"@task(name={label!r}, cron={spec.expr!r}, catch_up='all', max_catch_up={max_catch_up!r})",
            )
        if not int32(max_catch_up) or max_catch_up < 1:
            raise JobsError(
                X_INVALID_DEFINITION,
                cause=f"task {label!r} declares max_catch_up={max_catch_up!r}; it must be a whole number from 1 to "
                f"{INT32 - 1} (the scheduler stores it as a 32-bit integer)",
                fix=f"@task(name={label!r}, cron={spec.expr!r}, catch_up='all', max_catch_up=24)",
            )
    fixed, text = check_json_text(input, job=label)

    def wrap(fn: Handler) -> TaskDefinition:
        task_name = _check_task_name(name or getattr(fn, "__name__", None))
        base = job(
            name=task_name,
            queue=queue,
            idempotency_key=_occurrence_key(task_name),
            retry=retry,
            timeout=timeout,
            step_timeout=step_timeout,
            priority=priority,
        )(fn)
        site = f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}"
        if _DECLARED.get(task_name, site) != site:
            raise JobsError(
                X_DUPLICATE_JOB,
                cause=f"two tasks are named {task_name!r} ({_DECLARED[task_name]} and {site}): they would share"
                " one watermark and one set of occurrence keys",
                fix=f"@task(name='{task_name}_v2', cron={spec.expr!r})",
            )
        _DECLARED[task_name] = site
        return TaskDefinition(
            **{f.name: getattr(base, f.name) for f in fields(JobDefinition)},
            cron=spec,
            catch_up=catch_up,  # type: ignore[arg-type]
            max_catch_up=max_catch_up if max_catch_up is not None else DEFAULT_MAX_CATCH_UP,
            fixed_input=fixed,
            input_text=text,
        )

    return wrap


def tasks_of(handles: Any) -> list[TaskDefinition]:
    """The task handles among a registry's (or any iterable's) job handles, by name."""
    return sorted((h for h in handles if isinstance(h, TaskDefinition)), key=lambda h: h.name)
