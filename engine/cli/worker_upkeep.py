"""`jobsctl worker`'s maintenance options, checked before the database is touched and turned into
the MaintenanceConfig its leader runs: each positive and finite, dead letters kept at least as
long as the rest (the audit log's entries by a retention of their own), and none given with
--no-maintenance, which never leads (refused, not dropped)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.options import finite_positive, seconds, seconds_rule

if TYPE_CHECKING:
    from engine.services.maintenance import MaintenanceConfig


def positive(name: str, value: float | None, command: str, example: str, *, duration: bool = False) -> None:
    """--NAME VALUE refused unless it is a finite number > 0, and a ``duration`` a number of
    seconds at most engine.options.LONGEST_SECONDS (None: not given)."""
    if value is not None and not (seconds(value) if duration else finite_positive(value)):
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"--{name} {value!r} must be "
            + (seconds_rule("a positive, finite number of seconds") if duration else "a positive, finite number"),
            fix=f"{command} --{name} {example}",
        )


def check_lease(lease_seconds: float, command: str) -> None:
    """--lease-seconds refused below the engine's shortest lease (WorkerConfig's own refusal names
    no module; this one names the command being typed)."""
    from engine.runtime.worker_config import MIN_LEASE_SECONDS

    if lease_seconds < MIN_LEASE_SECONDS:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"--lease-seconds {lease_seconds:g} is below {MIN_LEASE_SECONDS:g} s: a claim's lease would lapse "
            "while its job runs, and the rescuer would hand the job to another worker while this one still runs it",
            fix=f"{command} --lease-seconds 30",
        )


def maintenance_config(
    target: str,
    lease_seconds: float,
    *,
    off: bool,
    interval: float | None,
    retention: float | None,
    dead_retention: float | None,
    reindex_interval: float | None,
    reindex_min_mb: float | None,
    vacuum_threshold: int | None,
    audit_retention: float | None = None,
) -> MaintenanceConfig | None:
    """The leader's config, None with --no-maintenance (given with it, the leader's options are refused)."""
    from engine.services.maintenance import MaintenanceConfig

    command = f"jobsctl worker {target}"
    given = {
        "maintenance-interval": interval,
        "retention": retention,
        "dead-retention": dead_retention,
        "audit-retention": audit_retention,
        "reindex-interval": reindex_interval,
        "reindex-min-mb": reindex_min_mb,
        "vacuum-threshold": vacuum_threshold,
    }
    named = [f"--{n}" for n, v in given.items() if v is not None]
    if off and named:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"{', '.join(named)} set what the maintenance leader does, and --no-maintenance never leads "
            "(to lead with them, leave --no-maintenance out instead)",
            fix=f"{command} --no-maintenance",
        )
    if off:
        return None
    for name, value, example in (
        ("maintenance-interval", interval, "5"),
        ("retention", retention, "604800"),
        ("dead-retention", dead_retention, "2592000"),
        ("audit-retention", audit_retention, "31536000"),
    ):
        positive(name, value, command, example, duration=True)
    positive("reindex-min-mb", reindex_min_mb, command, "16")
    if reindex_interval is not None and reindex_interval != 0:
        positive("reindex-interval", reindex_interval, command, "600", duration=True)
    if vacuum_threshold is not None and vacuum_threshold < 0:
        positive("vacuum-threshold", vacuum_threshold, command, "10000")
    kept_for = retention if retention is not None else MaintenanceConfig.retention
    if dead_retention is not None and dead_retention < kept_for:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"--dead-retention {dead_retention:g} is shorter than the retention of completed jobs "
            f"({kept_for:g} s): dead letters are kept at least as long, so an operator can act on them first",
            fix=f"{command} --retention {min(kept_for, dead_retention):g} --dead-retention {dead_retention:g}",
        )
    # Dead letters are never kept shorter than the rest: a long --retention alone lengthens theirs.
    dead_kept = dead_retention if dead_retention is not None else max(kept_for, MaintenanceConfig.dead_retention)
    every = MaintenanceConfig.interval if interval is None else interval
    return MaintenanceConfig(
        interval=every,
        leader_lease=max(lease_seconds, every * 3),
        retention=kept_for,
        dead_retention=dead_kept,
        audit_retention=MaintenanceConfig.audit_retention if audit_retention is None else audit_retention,
        **_upkeep(reindex_interval, reindex_min_mb, command),
        **_vacuum(vacuum_threshold),
    )


def _vacuum(threshold: int | None) -> dict[str, Any]:
    """MaintenanceConfig's table upkeep field from --vacuum-threshold (0: off, autovacuum's alone)."""
    return {} if threshold is None else {"vacuum_threshold": threshold or None}


def _upkeep(interval: float | None, min_mb: float | None, command: str) -> dict[str, Any]:
    """MaintenanceConfig's index upkeep fields from --reindex-interval (0: off) and --reindex-min-mb."""
    if interval == 0:
        if min_mb is not None:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"--reindex-min-mb {min_mb:g} does nothing with --reindex-interval 0 (index upkeep off); "
                f"to keep upkeep on, give --reindex-interval 600 --reindex-min-mb {min_mb:g} instead",
                fix=f"{command} --reindex-interval 0",
            )
        return {"reindex_interval": None}
    out: dict[str, Any] = {}
    if interval is not None:
        out["reindex_interval"] = interval
    if min_mb is not None:
        out["reindex_min_bytes"] = int(min_mb * 1024 * 1024)
    return out
