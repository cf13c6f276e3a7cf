"""Every duration option (a job's timeout, an enqueue's delay, a worker's lease and intervals, the
services' intervals, leases and retentions) is refused past LONGEST_SECONDS when it is given,
with the ceiling named, by one rule (engine.options.seconds): a value past it (1e300) was taken
and then failed long after, in a worker's claim (now + lease) or a maintenance pass (now -
retention), where a datetime cannot hold it. The ceiling itself is taken and runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from engine.api import Engine
from engine.backfills import Backfills, Batch
from engine.cli.worker_upkeep import maintenance_config
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.errors import JobsError
from engine.ids import IdFactory
from engine.jobs import job
from engine.options import LONGEST_SECONDS
from engine.runtime.step_checks import check_sleep, check_wait_timeout
from engine.runtime.worker_config import WorkerConfig
from engine.services.maintenance import Maintenance, MaintenanceConfig
from engine.services.relay import RelayConfig
from engine.services.scheduler import SchedulerConfig
from engine.testing import arun_due

SAID = f"at most {LONGEST_SECONDS} (100 years)"
PAST = LONGEST_SECONDS * 1.5


def _key(inp: Any) -> str:
    return str(inp["n"])


async def _handler(ctx: Any, inp: Any) -> int:
    return 1


def _declare_job(**options: Any) -> Any:
    return job(name="ceil.job", queue="ceil", idempotency_key=_key, **options)(_handler)


def _declare_backfill(timeout: float) -> Any:
    bf = Backfills(version="1")

    def flags(batch: Batch) -> None:
        pass

    return bf.backfill("ceil", source=lambda conn, after, size: ([], after), count=lambda conn: 0, timeout=timeout)(
        flags
    )


def _worker_flags(**given: float) -> object:
    flags: dict[str, Any] = dict.fromkeys(("interval", "retention", "dead_retention", "reindex_interval"))
    return maintenance_config(
        "app.jobs", 30, off=False, reindex_min_mb=None, vacuum_threshold=None, **{**flags, **given}
    )


WORKER = [
    "flush_interval",
    "lease_seconds",
    "poll_interval",
    "heartbeat_interval",
    "grace",
    "close_timeout",
    "presence_interval",
    "shed_delay",
    "gauges_interval",
    "start_timeout",
]
MAINTENANCE = [
    "interval",
    "leader_lease",
    "retention",
    "dead_retention",
    "worker_reap_after",
    "throughput_settle",
    "outbox_retention",
    "audit_retention",
    "reindex_interval",
]

GIVEN: list[tuple[str, Callable[[float], object]]] = [
    ("timeout", lambda v: _declare_job(timeout=v)),
    ("step_timeout", lambda v: _declare_job(step_timeout=v)),
    ("backfill timeout", _declare_backfill),
    *[(f"WorkerConfig {n}", lambda v, n=n: WorkerConfig(**{n: v})) for n in WORKER],
    *[(f"MaintenanceConfig {n}", lambda v, n=n: MaintenanceConfig(**{n: v, "dead_retention": v})) for n in MAINTENANCE],
    *[(f"RelayConfig {n}", lambda v, n=n: RelayConfig(**{n: v})) for n in ("poll_interval", "heartbeat_interval")],
    ("RelayConfig gauges_interval", lambda v: RelayConfig(gauges_interval=v)),
    *[(f"SchedulerConfig {n}", lambda v, n=n: SchedulerConfig(**{n: v})) for n in ("interval", "grace")],
    ("SchedulerConfig leader_lease", lambda v: SchedulerConfig(leader_lease=v)),
    ("step sleep", lambda v: check_sleep("nap", v)),
    ("step wait timeout", lambda v: check_wait_timeout("w", v, "timeout=86400")),
    ("jobsctl worker --retention", lambda v: _worker_flags(retention=v, dead_retention=v)),
    ("jobsctl worker --reindex-interval", lambda v: _worker_flags(reindex_interval=v)),
    ("jobsctl worker --audit-retention", lambda v: _worker_flags(audit_retention=v)),
]


@pytest.mark.parametrize("value", [PAST, 1e300, float("inf")])
@pytest.mark.parametrize(("option", "give"), GIVEN, ids=[g[0] for g in GIVEN])
def test_a_duration_option_past_the_ceiling_is_refused_naming_the_ceiling(
    option: str, give: Callable[[float], object], value: float
) -> None:
    with pytest.raises(JobsError) as exc:
        give(value)
    assert SAID in exc.value.cause and exc.value.fix, exc.value


def test_an_enqueue_delay_past_the_ceiling_is_refused_naming_the_ceiling() -> None:
    from engine.newjobs import first_run

    with pytest.raises(JobsError) as exc:
        first_run(PAST, None, FakeClock().now())
    assert exc.value.cause.startswith(f"delay={PAST!r} must be a finite number of seconds >= 0 and {SAID}")
    assert first_run(LONGEST_SECONDS, None, FakeClock().now()) is not None


def test_the_ceiling_itself_is_taken_by_every_duration_option() -> None:
    # The leader's interval must be shorter than its lease, so those two are given apart.
    skip = {"SchedulerConfig interval", "MaintenanceConfig interval", "WorkerConfig lease_seconds"}
    for option, give in GIVEN:
        if option not in skip:
            give(LONGEST_SECONDS)
    assert WorkerConfig(lease_seconds=LONGEST_SECONDS).lease_seconds == LONGEST_SECONDS
    assert SchedulerConfig(interval=LONGEST_SECONDS / 2, leader_lease=LONGEST_SECONDS).leader_lease == LONGEST_SECONDS


async def test_a_worker_and_a_maintenance_pass_at_the_ceiling_run(
    driver: Driver, clock: FakeClock, ids: IdFactory
) -> None:
    eng = Engine(driver, clock=clock, ids=ids)
    handle = _declare_job(timeout=LONGEST_SECONDS)
    await eng.aenqueue(handle, {"n": 1}, delay=0)
    ran = await arun_due(eng, [handle], lease_seconds=LONGEST_SECONDS, shed_delay=LONGEST_SECONDS)
    assert [e.outcome for e in ran.executions] == ["completed"]
    ceiling = {n: LONGEST_SECONDS for n in MAINTENANCE if n not in ("interval", "leader_lease")}
    done = await Maintenance(driver, clock, holder="m", config=MaintenanceConfig(**ceiling)).run_once()
    assert done.leader
