"""WorkerConfig: a worker's settings, each refused at declaration when out of range."""

from __future__ import annotations

from dataclasses import dataclass

from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.options import Options, finite_positive
from engine.retry import check_traceback_limit


def _bad(name: str, value: object, fix: str) -> JobsError:
    return JobsError(X_INVALID_ARGUMENT, cause=f"worker option {name}={value!r} must be positive and finite", fix=fix)


@dataclass(frozen=True)
class WorkerConfig(Options):
    queues: tuple[str, ...] = ()  # empty: every queue the registry's jobs use
    concurrency: int = 10  # claim slots: jobs running at once in this process
    batch_size: int = 100  # most rows one claim takes
    ack_batch: int = 200  # completions per ack statement
    ack_parallel: int = 1  # ack statements in flight at once (each on its own pooled connection)
    flush_interval: float = 0.005  # longest a completion waits for its batch (seconds)
    lease_seconds: float = 30.0
    renew_interval: float | None = None  # default lease_seconds / 3
    poll_interval: float = 1.0  # the fallback when no NOTIFY arrives
    heartbeat_interval: float = 5.0
    grace: float = 30.0  # drain: how long in-flight jobs may finish before they are released
    # drain: the most the close after the grace may take (release, flush, stop the loops,
    # deregister), real seconds; past it a step that waits on the database is given up
    close_timeout: float = 10.0
    # start: how long to wait for a database that does not answer (real seconds); None: as long as it takes
    start_timeout: float | None = None
    # how often (real seconds) the worker checks its presence and re-delivers gone workers' jobs
    presence_interval: float = 0.5
    shed_delay: float = 1.0  # a concurrency shed is claimable again after this
    gauges_interval: float = 10.0
    burst: bool = False  # stop once nothing is due in these queues and every claimed job has settled
    traceback_limit: int = 8192  # most characters of a failed attempt's traceback stored (its tail); 0: none
    # while it runs, the cycle collector's youngest generation is sized for its slots
    # (engine/runtime/collector.py); False: the process's collector is left as it is
    tune_gc: bool = True
    id: str | None = None

    OPTION_FIX = "eng.worker(jobs, {option}=...)"

    def __post_init__(self) -> None:
        q = self.queues
        if isinstance(q, str) or not all(isinstance(n, str) and n for n in q):
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"worker option queues={q!r} must be a sequence of queue names"
                + (" (a string is one name, not a sequence)" if isinstance(q, str) else ""),
                fix=f"queues=({q!r},)" if isinstance(q, str) and q else "queues=('default',)",
            )
        for name in ("concurrency", "batch_size", "ack_batch", "ack_parallel"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise _bad(name, v, f"jobsctl worker MODULE --{name.replace('_', '-')} 10")
        for name in (
            "flush_interval",
            "lease_seconds",
            "poll_interval",
            "heartbeat_interval",
            "grace",
            "close_timeout",
            "presence_interval",
            "shed_delay",
            "gauges_interval",
        ):
            v = getattr(self, name)
            if not finite_positive(v):
                raise _bad(name, v, f"jobsctl worker MODULE --{name.replace('_', '-')} 30")
        st = self.start_timeout
        if st is not None and not finite_positive(st):
            raise _bad("start_timeout", st, "jobsctl worker MODULE --start-timeout 60")
        check_traceback_limit(self.traceback_limit)
        for name in ("burst", "tune_gc"):
            if not isinstance(getattr(self, name), bool):
                raise JobsError(
                    X_INVALID_ARGUMENT,
                    cause=f"worker option {name}={getattr(self, name)!r} must be True or False",
                    fix=f"{name}=True",
                )
        if self.renew_interval is not None and not (0 < self.renew_interval < self.lease_seconds):
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"renew_interval={self.renew_interval!r} must be > 0 and shorter than "
                f"lease_seconds={self.lease_seconds}",
                fix=f"renew_interval={self.lease_seconds / 3:g}",
            )


def served_queues(asked: tuple[str, ...], used: tuple[str, ...]) -> tuple[str, ...]:
    """The queues a worker claims from: those asked for, else every queue its jobs use. A queue
    asked for that none of its jobs uses is refused: nothing it claimed there could run (a typo,
    or the wrong jobs module)."""
    unknown = sorted(set(asked) - set(used))
    if unknown:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"queues {', '.join(unknown)} are used by no job this worker serves (its jobs use "
            f"{', '.join(used) or 'none'})",
            fix=f"queues={used!r}",
        )
    return tuple(asked) or used
