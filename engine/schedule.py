"""Cron arithmetic and catch-up selection for the scheduler: pure, no database, no clock.

Occurrences come from cronsim, never from code of ours: it fires a fixed time in a fall-back hour
once (croniter 7.0 fires "30 2 * * *" twice on the night Europe/Paris falls back) and moves a
fixed time in a spring-forward gap to the first instant after it. Every occurrence is a UTC
instant; the scheduler keeps them as such and only the cron library sees the zone.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from engine.errors import X_INVALID_DEFINITION, JobsError

CatchUp = Literal["skip", "latest", "all"]
CATCH_UP: tuple[CatchUp, ...] = ("skip", "latest", "all")
DEFAULT_MAX_CATCH_UP = 100
# Every scheduler process stamps the tasks it knows this often (seconds); one no process has
# stamped for RETIRED_AFTER is retired. Ten stamps' room: a restart or a deploy never retires one.
SEEN_EVERY = 60.0
RETIRED_AFTER = 600.0
# Most due occurrences one tick reads per task. Past it (a "* * * * *" task down for a day), the
# tick settles this many as skipped and the next tick reads on: catch-up applies to the last read.
SCAN_LIMIT = 1000
# Zone files that load whatever the host says (its own zone, its default rules, "unknown"), and
# the database's other trees (``right/``: clocks counting leap seconds; ``posix/``: copies under
# another name): two schedulers on different hosts could compute different instants from them.
HOST_ZONES = frozenset({"localtime", "posixrules", "Factory"})
OTHER_TREES = ("posix/", "right/")


def instant_text(at: datetime) -> str:
    """An occurrence's scheduled instant as the key and the job's input spell it (UTC, seconds)."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def occurrence_key(task: str, at: datetime) -> str:
    """I21: the idempotency key of a task's occurrence is its name and its instant in UTC."""
    return f"{task}@{instant_text(at)}"


def trigger_key(task: str, at: datetime) -> str:
    """An operator's trigger has its own key, never one an occurrence of the cron holds."""
    return f"{task}@trigger:{at.astimezone(UTC).isoformat(timespec='microseconds')}"


@dataclass(frozen=True)
class Cron:
    """A checked cron expression (five fields, or six with seconds first) in an IANA zone."""

    expr: str
    timezone: str = "UTC"

    @cached_property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @cached_property
    def words(self) -> str:
        """The expression in words, from the parser that computes the occurrences."""
        return str(CronSim(self.expr, datetime(2000, 1, 1)).explain())

    def after(self, since: datetime) -> Iterator[datetime]:
        """Occurrences strictly after ``since``, as increasing UTC instants. cronsim can answer an
        instant before its start in a fall-back hour (it iterates a fixed time on the wall clock):
        such an answer, or a repeat, is dropped, so each instant is yielded once, in order."""
        last = since.astimezone(UTC)
        for local in CronSim(self.expr, last.astimezone(self.zone)):
            at = local.astimezone(UTC)
            if at > last:
                yield at
                last = at

    def next_after(self, since: datetime) -> datetime | None:
        return next(self.after(since), None)

    def due(self, since: datetime, until: datetime, *, limit: int = SCAN_LIMIT) -> tuple[list[datetime], bool]:
        """Occurrences in (since, until], at most ``limit``; True when more are due past them."""
        out: list[datetime] = []
        for at in self.after(since):
            if at > until:
                return out, False
            if len(out) == limit:
                return out, True
            out.append(at)
        return out, False


def parse_cron(expr: object, timezone: object, *, task: str) -> Cron:
    """A Cron, or X_INVALID_DEFINITION naming the expression or the zone and a fix."""
    if not isinstance(timezone, str) or not timezone:
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"task {task!r} declares timezone={timezone!r}, not an IANA zone name",
            fix=f"@task(name={task!r}, cron=..., timezone='Europe/Paris')",
        )
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"task {task!r} declares timezone={timezone!r}, which the zone database does not know",
            fix=f"@task(name={task!r}, cron=..., timezone='UTC')",
        ) from None
    if timezone in HOST_ZONES or timezone.startswith(OTHER_TREES):
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"task {task!r} declares timezone={timezone!r}, a zone file that is not an IANA zone name: "
            "schedulers on different hosts could compute different instants from it",
            fix=f"@task(name={task!r}, cron=..., timezone='Europe/Paris')",
        )
    if not isinstance(expr, str) or not expr.strip():
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"task {task!r} declares cron={expr!r}, not a cron expression",
            fix=f"@task(name={task!r}, cron='*/5 * * * *')",
        )
    text = " ".join(expr.split())
    try:
        sim = CronSim(text, datetime(2000, 1, 1))
    except CronSimError as exc:
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"task {task!r} declares cron={expr!r}: {exc} (five fields: minute hour day month weekday)",
            fix=f"@task(name={task!r}, cron='*/5 * * * *')",
        ) from None
    # With both day fields restricted cron fires on either; a day of the month that none of the
    # months has (31 in April) would never be the one that fires, and the weekday alone would.
    days = sim.days  # the last day ("L", "LW") is a negative sentinel, and some month always has it
    if not sim.day_and and min(days) > max(_DAYS_IN_MONTH[m] for m in sim.months):
        fields = text.split()
        at = len(fields) - 3  # the day of the month: the third field from the end
        fields[at] = "*"
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"task {task!r} declares cron={expr!r}: no month it names has day {min(days)}, so that day never "
            "fires it and only its weekday would (cron fires on either day field)",
            fix=f"@task(name={task!r}, cron={' '.join(fields)!r})",
        )
    return Cron(text, timezone)


_DAYS_IN_MONTH = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30, 12: 31}


@dataclass(frozen=True)
class Step:
    """One fenced write of a tick: the watermark moves to ``at``; ``enqueue``: ``at`` itself is
    enqueued; ``skipped``: occurrences before ``at`` that catch-up settles without a job."""

    at: datetime
    skipped: int
    enqueue: bool


def plan_catch_up(
    due: Sequence[datetime],
    *,
    now: datetime,
    policy: CatchUp,
    max_catch_up: int,
    grace: float,
    truncated: bool = False,
) -> list[Step]:
    """What a tick does with the occurrences due since the watermark (oldest first).

    An occurrence at most ``grace`` seconds old is on time (a handover takes up to a lease) and is
    enqueued whatever the policy. Older ones were missed: ``skip`` enqueues none of them (only the
    next occurrence runs), ``latest`` the most recent one, ``all`` the most recent ``max_catch_up``.
    The skipped ones ride on the first write, so the count and the watermark move together.
    ``truncated``: more are due past ``due``, so every one of these was missed and is skipped.
    """
    if not due:
        return []
    if truncated:
        return [Step(due[-1], len(due), False)]
    on_time = [at for at in due if (now - at).total_seconds() <= grace]
    missed = list(due[: len(due) - len(on_time)])
    if policy == "skip":
        kept: list[datetime] = []
    elif policy == "latest":
        kept = missed[-1:]
    else:
        kept = missed[-max_catch_up:] if max_catch_up > 0 else []
    enqueued = kept + on_time
    skipped = len(missed) - len(kept)
    if not enqueued:
        return [Step(due[-1], skipped, False)]
    steps = [Step(at, 0, True) for at in enqueued]
    steps[0] = Step(enqueued[0], skipped, True)
    return steps


# --- the driver's rows (jobs.schedule_state, jobs.schedule_leader) ------------------------------


@dataclass(frozen=True)
class TaskDecl:
    """A task's declaration as the scheduler stores it: what any leader needs to enqueue it."""

    name: str
    cron: str
    timezone: str
    catch_up: CatchUp
    max_catch_up: int
    queue: str
    max_attempts: int
    priority: int
    input_text: str  # the fixed input, JSON text


@dataclass(frozen=True)
class ScheduleRow:
    """One task's durable state: its declaration, watermark, last enqueued occurrence, pause."""

    task: str
    cron: str
    timezone: str
    catch_up: CatchUp
    max_catch_up: int
    queue: str
    declared_at: datetime
    watermark: datetime | None  # every occurrence at or before it is settled (enqueued or skipped)
    skipped: int  # occurrences skipped by catch-up, ever
    last_at: datetime | None  # the last occurrence enqueued (its scheduled instant)
    last_job_id: str | None
    last_job_state: str | None  # that job's state now; None once it is pruned
    paused: bool
    paused_by: str | None
    paused_at: datetime | None
    note: str | None
    seen_at: datetime  # when a scheduler process last declared it (Scheduler stamps it, SEEN_EVERY)

    def retired(self, now: datetime) -> bool:
        """No scheduler process has declared the task for RETIRED_AFTER: it was removed from the
        code, and the leader enqueues none of its occurrences until a process declares it again."""
        return (now - self.seen_at).total_seconds() > RETIRED_AFTER

    @property
    def since(self) -> datetime:
        """Occurrences after this instant are owed."""
        return self.watermark if self.watermark is not None else self.declared_at


@dataclass(frozen=True)
class SchedulerLeader:
    """The scheduler's lease (jobs.leader) and what its holder stamped on its last tick."""

    holder: str
    term: int
    lease_until: datetime
    host: str | None
    pid: int | None
    ticked_at: datetime | None


@dataclass(frozen=True)
class Advanced:
    """What one fenced step wrote: ``moved`` False when the fence refused it (not the leader in
    this term, a watermark moved since, a paused task); ``job_id`` the occurrence inserted (None
    when a live job already held its key, or the step enqueued nothing)."""

    moved: bool
    job_id: str | None = None


@dataclass(frozen=True)
class SchedulePause:
    task: str
    paused: bool
    paused_by: str | None
    paused_at: datetime | None
    note: str | None
    changed: bool


@dataclass(frozen=True)
class Triggered:
    task: str
    job_id: str | None  # None: a live job already holds this trigger's key
    key: str
