"""WorkerConfig: a worker's settings, each refused at declaration when out of range."""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.names import check_name
from engine.options import Options, seconds, seconds_rule
from engine.retry import check_traceback_limit
from engine.runtime.metrics import Metrics

# The shortest lease the engine takes, a job's claim, a relay's claim of outbox rows and a leader's
# alike. A lease is a promise that the work it covers ends, or is renewed, before it lapses: the
# claim's round trip, the start of the run, a commit's fsync, an event loop busy for a moment. One
# shorter than a second lapses under that ordinary work, and what it holds is taken by another
# worker (relay, leader) while its holder still works on it: a job run twice, a row published twice.
MIN_LEASE_SECONDS = 1.0
# A worker's row is reaped (maintenance's worker_reap_after) only once it missed this many
# heartbeats in a row: a late beat (a database blip, a long collection) never reaps a live worker.
# Its health check (runtime/health.py) calls it unhealthy past the same count.
REAP_BEATS = 3


def _bad(name: str, value: object, fix: str, rule: str = "a whole number >= 1") -> JobsError:
    return JobsError(X_INVALID_ARGUMENT, cause=f"worker option {name}={value!r} must be {rule}", fix=fix)


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
            if not seconds(v):
                raise _bad(name, v, f"jobsctl worker MODULE --{name.replace('_', '-')} 30", seconds_rule())
        if self.lease_seconds < MIN_LEASE_SECONDS:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"worker option lease_seconds={self.lease_seconds!r} is below {MIN_LEASE_SECONDS:g} s: the lease "
                "would lapse while its job is claimed and run, and the rescuer would hand the job to another worker "
                "while this one still runs it",
                fix="jobsctl worker MODULE --lease-seconds 30",
            )
        st = self.start_timeout
        if st is not None and not seconds(st):
            raise _bad("start_timeout", st, "jobsctl worker MODULE --start-timeout 60", seconds_rule())
        check_traceback_limit(self.traceback_limit)
        for name in ("burst", "tune_gc"):
            if not isinstance(getattr(self, name), bool):
                raise JobsError(
                    X_INVALID_ARGUMENT,
                    cause=f"worker option {name}={getattr(self, name)!r} must be True or False",
                    fix=f"{name}=True",
                )
        if self.id is not None:  # the name `jobsctl workers` lists and `jobsctl workers drain ID` takes
            check_name(self.id, "worker option id", "eng.worker(jobs, id='web-1')", code=X_INVALID_ARGUMENT)
        if self.renew_interval is not None and not (0 < self.renew_interval < self.lease_seconds):
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"renew_interval={self.renew_interval!r} must be > 0 and shorter than "
                f"lease_seconds={self.lease_seconds}",
                fix=f"renew_interval={self.lease_seconds / 3:g}",
            )


def check_hooks(on_execution: object, metrics: object) -> None:
    """A worker's on_execution (called with each Execution as its job settles) and metrics, refused
    when the worker is built: a wrong one would fail in the worker's settle path, after the job ran."""
    for name, value, ok, fix in (
        ("on_execution", on_execution, callable(on_execution), "on_execution=lambda ex: print(ex.outcome)"),
        ("metrics", metrics, isinstance(metrics, Metrics), "metrics=engine.runtime.metrics.Metrics()"),
    ):
        if value is not None and not ok:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"worker option {name}={value!r:.60} is not "
                + ("callable" if name == "on_execution" else "a Metrics"),
                fix=f"eng.worker(jobs, {fix})",
            )


def check_leader_lease(config: str, lease: float, interval: float) -> None:
    """A leader's lease (``config``'s leader_lease, taken again by each pass, ``interval`` seconds
    apart) refused below MIN_LEASE_SECONDS, or when the leader would lose it between two passes."""
    if lease < MIN_LEASE_SECONDS:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"{config} leader_lease={lease!r} is below {MIN_LEASE_SECONDS:g} s: it would lapse within the "
            "leader's own pass, and another process lead at the same time",
            fix=f"{config}(leader_lease=30)",
        )
    if interval >= lease:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"{config} interval={interval:g} is not shorter than leader_lease={lease:g}: the leader would "
            "lose its lease between two passes",
            fix=f"{config}(interval={interval:g}, leader_lease={max(interval * 3, 30):g})",
        )


def check_reap_window(
    reap_after: float, heartbeat_interval: float | None = None, *, given: str = "", fix: str = ""
) -> None:
    """A reap window (maintenance's worker_reap_after) refused when fewer than REAP_BEATS
    heartbeats of a worker beating every ``heartbeat_interval`` seconds (None: the default
    interval) fit in it: the leader would reap that worker's row, alive, between two of its
    heartbeats. ``given`` names the value refused and ``fix`` mends it; by default the refused
    value is the heartbeat_interval and the fix a shorter one."""
    beat = WorkerConfig.heartbeat_interval if heartbeat_interval is None else heartbeat_interval
    if beat * REAP_BEATS > reap_after:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"{given or f'heartbeat_interval={beat:g}'}: a worker's row is reaped {reap_after:g} s after its "
            f"last heartbeat, less than {REAP_BEATS} heartbeats {beat:g} s apart; a live worker would drop out of "
            "`jobsctl workers` and the console between its heartbeats, and a drain request to it find no worker",
            fix=fix or f"heartbeat_interval={math.floor(reap_after / REAP_BEATS * 1000) / 1000:g}",  # rounded down
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
