"""Job declarations, the registry of handles, and the manifest (`describe_jobs`).

A definition is checked whole at declaration: a missing idempotency key (I1), a non-positive
ceiling (I11) or an unknown option is refused there, never at the first run.
"""

from __future__ import annotations

import inspect
import types as pytypes
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from engine.errors import (
    X_DUPLICATE_JOB,
    X_IDEMPOTENCY_REQUIRED,
    X_INVALID_ARGUMENT,
    X_INVALID_DEFINITION,
    X_NOT_A_JOB,
    X_UNKNOWN_JOB,
    JobsError,
    unknown_option,
)
from engine.names import check_name, check_queue_name
from engine.options import Options, finite_positive, int32, seconds, seconds_rule
from engine.retry import LONGEST_DELAY, RetryPolicy
from engine.text import check_text

DEFAULT_QUEUE = "default"
DEFAULT_EVENT_POLL = 30.0
# How often a job waiting for an event looks again, in seconds: from once a second to once a day.
EVENT_POLL_RANGE = (1.0, 86400.0)

Handler = Callable[..., Any]
KeyFn = Callable[[Any], str]


@dataclass(frozen=True)
class RateLimit(Options):
    """At most ``limit`` starts per ``per`` seconds, per key (``key(input, tenant)``) or global.

    ``key`` answers a string, the bucket's name: text PostgreSQL can store, at most 1,000 bytes of
    UTF-8. Any other answer (None, a number, a dict) fails the attempt as terminal
    X_INVALID_ARGUMENT, as a key that raises does: None is not "no key" (leave ``key`` out for one
    bucket), and 42 never shares a bucket with '42'."""

    limit: int
    per: float
    key: Callable[[Any, str | None], str] | None = None

    OPTION_CODE = X_INVALID_DEFINITION

    def __post_init__(self) -> None:
        limit, per = self.limit, self.per
        if not (int32(limit) and limit >= 1) or not finite_positive(per):
            raise JobsError(
                X_INVALID_DEFINITION,
                cause=f"RateLimit(limit={limit!r}, per={per!r}) needs a whole limit >= 1 and per a positive, "
                "finite number of seconds",
                fix="RateLimit(limit=10, per=1.0)",
            )
        if per > LONGEST_DELAY:
            raise JobsError(
                X_INVALID_DEFINITION,
                cause=f"RateLimit(limit={limit!r}, per={per!r}): per is past a year ({LONGEST_DELAY:.0f} s), "
                "the longest the engine delays a job",
                fix="RateLimit(limit=10, per=86400)",
            )
        key = self.key
        # Called with (input, tenant) before each run: a key that cannot take them would fail
        # every run of the job, so it is refused here.
        if key is not None and (not callable(key) or (sig := refused_call(key, 2)) is not None):
            raise JobsError(
                X_INVALID_DEFINITION,
                cause=f"RateLimit key={key!r} is not a function of (input, tenant)"
                + (f": it takes {sig}" if callable(key) else ""),
                fix="RateLimit(limit=10, per=1.0, key=lambda inp, tenant: tenant or '-')",
            )


@dataclass(frozen=True, eq=False)
class JobDefinition:
    # A cron task's handle (engine/tasks.py) says so here: a worker asks before it imports the
    # scheduler and its cron parser.
    is_task: ClassVar[bool] = False
    # A job only its own door may enqueue (a backfill's pass, after its gates): enqueue, stage and
    # a handler's fan-out refuse it with gate_refusal(); the door enqueues it as an Opened.
    gated: ClassVar[bool] = False

    name: str
    fn: Handler
    queue: str
    idempotency_key: KeyFn
    retry: RetryPolicy
    timeout: float | None
    step_timeout: float | None
    event_poll: float
    concurrency: int | None
    rate_limit: RateLimit | None
    priority: int
    is_async: bool

    def __post_init__(self) -> None:
        # Every declaration (@job, @task, @bf.backfill) builds one: what the worker later reads
        # as a policy or stores in a 32-bit column is checked here, not at the first failure.
        if not isinstance(self.retry, RetryPolicy):
            raise JobsError(
                X_INVALID_DEFINITION,
                cause=f"job {self.name!r} declares retry={self.retry!r}, not a RetryPolicy",
                fix="retry=RetryPolicy(attempts=3)",
            )
        for option, value in (("priority", self.priority), ("concurrency", self.concurrency)):
            if value is not None and not int32(value):
                raise JobsError(
                    X_INVALID_DEFINITION,
                    cause=f"job {self.name!r} declares {option}={value!r}: it must be a whole number (not a bool) "
                    "that a 32-bit integer holds",
                    fix=f"@job(name={self.name!r}, {option}={10 if option == 'concurrency' else 0})",
                )

    def gate_refusal(self) -> JobsError:
        """Why a gated job is not enqueued as any other job is, and its door (a gated class says which)."""
        return JobsError(
            X_INVALID_ARGUMENT,
            cause=f"job {self.name!r} is started only through its own door",
            fix="start it through the API that declared it",
        )

    def key_for(self, inp: Any) -> str:
        try:
            key = self.idempotency_key(inp)
        except JobsError:  # the key function's own error (a task's) already says what to do
            raise
        except Exception as exc:  # the app's function on this input: the input lacks what it reads
            fields = ", ".join(map(str, list(inp)[:10])) if isinstance(inp, dict) and inp else "none"
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"the idempotency key of job {self.name!r} cannot be derived from this input: "
                f"{type(exc).__name__}: {exc} (the input's fields: {fields})",
                fix=f"enqueue {self.name} with the fields its idempotency_key reads",
            ) from exc
        if not isinstance(key, str) or not key:
            raise JobsError(
                X_INVALID_DEFINITION,
                cause=f"idempotency_key of job {self.name!r} returned {key!r}, not a non-empty string",
                fix=f"@job(name={self.name!r}, idempotency_key=lambda inp: f\"order:{{inp['id']}}\")",
            )
        check_text(
            key,
            what=f"the idempotency key of job {self.name!r}",
            fix="enqueue an input whose key fields hold text only",
        )
        return key

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calling the handle calls the handler itself (handy in unit tests of app code)."""
        return self.fn(*args, **kwargs)


_OPTIONS = (
    "name",
    "queue",
    "idempotency_key",
    "retry",
    "timeout",
    "step_timeout",
    "event_poll",
    "concurrency",
    "rate_limit",
    "priority",
)


def refused_call(fn: Callable[..., Any], count: int) -> str | None:
    """None when ``fn`` can be called with ``count`` positional arguments, else its signature as
    text. A callable whose signature Python cannot read (some builtins and extension types) passes."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        sig.bind(*range(count))
    except TypeError:
        return str(sig)
    return None


def _positive(name: str, value: float | None, job_name: str, *, allow_none: bool = True) -> None:
    """A ceiling (timeout, step_timeout: None for none) is a duration option; event_poll, never
    None, has its own range, checked after this."""
    if value is None and allow_none:
        return
    if not (seconds(value) if allow_none else finite_positive(value)):
        rule = "a positive, finite number of seconds"
        why = (
            " (zero would read as 'no ceiling at all'; leave it out for none)"
            if allow_none
            else f" (leave it out for the default, {DEFAULT_EVENT_POLL:g} s)"
        )
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"job {job_name!r} declares {name}={value!r}; it must be {seconds_rule(rule) if allow_none else rule}{why}",
            fix=f"@job(name={job_name!r}, {name}=60)",
        )


def job(
    name: str | None = None,
    *,
    queue: str = DEFAULT_QUEUE,
    idempotency_key: KeyFn | None = None,
    retry: RetryPolicy | None = None,
    timeout: float | None = None,
    step_timeout: float | None = None,
    event_poll: float = DEFAULT_EVENT_POLL,
    concurrency: int | None = None,
    rate_limit: RateLimit | None = None,
    priority: int = 0,
    **unknown: Any,
) -> Callable[[Handler], JobDefinition]:
    """Declare a job: ``@job(name=..., idempotency_key=lambda inp: ...)`` over a handler
    ``(ctx, inp)``. ``async def`` handlers run on the worker's loop; plain ones in a thread."""
    if callable(name):  # @job over a def, without its (...): the def came as the name
        fn_name = getattr(name, "__name__", "handler")
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"@job was used without (...) over {fn_name!r}: a job needs at least its idempotency_key",
            fix=f"@job(name={fn_name!r}, idempotency_key=lambda inp: f\"{fn_name}:{{inp['id']}}\")",
        )
    if name is not None:
        check_name(name, "@job declares name", "@job(name='send_email', ...)")
    label = name or "<unnamed>"
    if unknown:
        raise unknown_option(
            f"job {label!r} declares unknown option",
            unknown,
            _OPTIONS,
            f"@job(name={label!r}, {{option}}=...)",
            "queue",
        )
    if idempotency_key is None or not callable(idempotency_key):
        raise JobsError(
            X_IDEMPOTENCY_REQUIRED,
            cause=f"job {label!r} has no idempotency_key function; a replayed enqueue would run the work twice",
            fix=f"@job(name={label!r}, idempotency_key=lambda inp: f\"user:{{inp['user_id']}}\")",
        )
    if (sig := refused_call(idempotency_key, 1)) is not None:
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"job {label!r} declares an idempotency_key taking {sig}, which cannot take one argument"
            " (the job's input)",
            fix=f"@job(name={label!r}, idempotency_key=lambda inp: f\"user:{{inp['user_id']}}\")",
        )
    check_queue_name(queue, f"job {label!r} declares queue", f"@job(name={label!r}, queue='default')")
    _positive("timeout", timeout, label)
    _positive("step_timeout", step_timeout, label)
    _positive("event_poll", event_poll, label, allow_none=False)
    low, high = EVENT_POLL_RANGE
    if not low <= event_poll <= high:
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"job {label!r} declares event_poll={event_poll!r}: how often a job waiting for an event looks "
            f"again, from {low:g} to {high:g} seconds (a day)",
            fix=f"@job(name={label!r}, event_poll={DEFAULT_EVENT_POLL:g})",
        )
    if timeout is not None and step_timeout is not None and step_timeout >= timeout:
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"job {label!r} declares step_timeout={step_timeout!r} >= timeout={timeout!r}: a step runs inside "
            "an attempt, so the attempt's timeout would always fire first and the step's never",
            fix=f"@job(name={label!r}, timeout={timeout!r}, step_timeout={timeout / 2:g})",
        )
    if concurrency is not None and (
        isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
    ):
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"job {label!r} declares concurrency={concurrency!r}; it must be a whole number >= 1",
            fix=f"@job(name={label!r}, concurrency=10)",
        )
    if rate_limit is not None and not isinstance(rate_limit, RateLimit):
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"job {label!r}: rate_limit must be a RateLimit",
            fix="rate_limit=RateLimit(limit=10, per=1.0)",
        )

    def wrap(fn: Handler) -> JobDefinition:
        if not callable(fn):
            raise JobsError(
                X_INVALID_DEFINITION,
                cause=f"@job({label!r}) decorates {fn!r}, which is not callable",
                fix="put @job(...) above a def",
            )
        if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
            raise JobsError(  # calling it would answer a generator, its body never run
                X_INVALID_DEFINITION,
                cause=f"@job({label!r}) decorates {getattr(fn, '__qualname__', fn)!s}, a generator function (it yields)",
                fix="def handler(ctx, inp): return result",
            )
        if (sig := refused_call(fn, 2)) is not None:
            raise JobsError(
                X_INVALID_DEFINITION,
                cause=f"@job({label!r}) decorates {getattr(fn, '__qualname__', fn)!s}{sig}, which cannot take "
                "(ctx, inp): every attempt would fail",
                fix="def handler(ctx, inp): ...",
            )
        job_name = check_name(
            name or getattr(fn, "__name__", None), "@job declares name", "@job(name='send_email', ...)"
        )
        return JobDefinition(
            name=job_name,
            fn=fn,
            queue=queue,
            idempotency_key=idempotency_key,
            retry=retry or RetryPolicy(),
            timeout=float(timeout) if timeout is not None else None,
            step_timeout=float(step_timeout) if step_timeout is not None else None,
            event_poll=float(event_poll),
            concurrency=concurrency,
            rate_limit=rate_limit,
            priority=priority,
            is_async=inspect.iscoroutinefunction(fn),
        )

    return wrap


class Registry:
    """The jobs a worker or an app knows, by name. Only real handles register (I23)."""

    def __init__(self, handles: Iterable[JobDefinition] = ()) -> None:
        self._jobs: dict[str, JobDefinition] = {}
        for h in handles:
            self.register(h)

    def register(self, handle: object) -> JobDefinition:
        if not isinstance(handle, JobDefinition):
            raise JobsError(
                X_NOT_A_JOB,
                cause=f"{handle!r} is not a job handle (made by @job); look-alikes are never registered",
                fix="decorate the handler with @job(name=..., idempotency_key=...) and register that",
            )
        existing = self._jobs.get(handle.name)
        if existing is not None and existing is not handle:
            raise JobsError(
                X_DUPLICATE_JOB,
                cause=f"two definitions are named {handle.name!r}",
                fix=f"rename one: @job(name='{handle.name}_v2', ...)",
            )
        self._jobs[handle.name] = handle
        return handle

    @classmethod
    def from_module(cls, module: pytypes.ModuleType) -> Registry:
        """Every job handle a module holds; anything else in it (helpers, imports) is skipped."""
        return cls(v for v in vars(module).values() if isinstance(v, JobDefinition))

    def get(self, name: str) -> JobDefinition:
        try:
            return self._jobs[name]
        except KeyError:
            import difflib  # only a mistake pays its import

            near = difflib.get_close_matches(name, self._jobs, n=1)
            raise JobsError(
                X_UNKNOWN_JOB,
                cause=f"no job named {name!r} is registered"
                + (f" (did you mean {near[0]!r}?)" if near else f"; known: {', '.join(self.names()) or 'none'}"),
                fix="jobsctl describe --app MODULE",
            ) from None

    def names(self) -> list[str]:
        return sorted(self._jobs)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._jobs[n] for n in self.names())

    def __len__(self) -> int:
        return len(self._jobs)

    def __contains__(self, name: object) -> bool:
        return name in self._jobs

    def queues(self) -> list[str]:
        return sorted({h.queue for h in self._jobs.values()})


def as_registry(
    jobs: object,
    *,
    who: str = "the worker cannot serve",
    fix: str = "eng.worker([send_email, provision_workspace], concurrency=16)",
) -> Registry:
    """A Registry from what an app hands the worker: a Registry, a module, one job handle or an
    iterable of them. Anything else is refused (only real handles register, I23); ``who`` and
    ``fix`` name the caller in that refusal."""
    if isinstance(jobs, Registry):
        return jobs
    if isinstance(jobs, pytypes.ModuleType):
        return Registry.from_module(jobs)
    if isinstance(jobs, JobDefinition):
        return Registry([jobs])
    if isinstance(jobs, (list, tuple, set, frozenset)):
        return Registry(jobs)
    raise JobsError(X_INVALID_ARGUMENT, cause=f"{who} {jobs!r:.80}: not a Registry, module or job handles", fix=fix)


def describe_job(handle: JobDefinition) -> dict[str, Any]:
    """The manifest entry: declared facts only, each a value a deploy's reviewer reads as a change
    (the whole retry policy, the priority, whether a rate limit is per key). ``idempotent`` and
    ``keyed`` are published; the key functions never are. The handler itself (its code, whether it
    is ``async def``) is the code's to review, not the manifest's."""
    retry, rate = handle.retry, handle.rate_limit
    return {
        "name": handle.name,
        "queue": handle.queue,
        "priority": handle.priority,
        "retry": {
            "attempts": retry.attempts,
            "backoff": retry.backoff,
            "delay": float(retry.delay),
            "max_delay": float(retry.max_delay),
            "jitter": float(retry.jitter),
            "seed": retry.seed,
        },
        "timeout": handle.timeout,
        "step_timeout": handle.step_timeout,
        "event_poll": handle.event_poll,
        "concurrency": handle.concurrency,
        "rate_limit": None
        if rate is None
        else {"limit": rate.limit, "per": float(rate.per), "keyed": rate.key is not None},
        "idempotent": callable(handle.idempotency_key),
    }


def describe_jobs(handles: Iterable[JobDefinition] | Registry | pytypes.ModuleType) -> list[dict[str, Any]]:
    """Sorted by code points (Python's str order), never by locale (I23). Takes what as_registry does."""
    given = handles if isinstance(handles, Registry) or not isinstance(handles, Iterable) else list(handles)
    registry = as_registry(given, who="describe_jobs cannot describe", fix="describe_jobs([send_email, charge])")
    return [describe_job(h) for h in registry]  # a Registry iterates in name order
