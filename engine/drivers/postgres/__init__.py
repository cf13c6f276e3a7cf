"""PostgresDriver: the Driver protocol over psycopg 3, every statement named in sql/queries."""

from __future__ import annotations

import psycopg

from engine.drivers.postgres.actions import PostgresActions
from engine.drivers.postgres.jobs import PostgresJobs
from engine.drivers.postgres.limits import PostgresLimits
from engine.drivers.postgres.maintenance import PostgresMaintenance
from engine.drivers.postgres.pool import LoopPools, check_dsn, safe_dsn
from engine.drivers.postgres.schedules import PostgresSchedules
from engine.drivers.postgres.schema import SCHEMA_VERSION, install_schema
from engine.drivers.postgres.steps import PostgresSteps
from engine.drivers.postgres.workers import PostgresWorkers
from engine.drivers.sqlfiles import Q
from engine.errors import X_SCHEMA_MISSING, X_SCHEMA_OUTDATED, JobsError


class PostgresDriver(
    PostgresJobs,
    PostgresWorkers,
    PostgresLimits,
    PostgresMaintenance,
    PostgresSteps,
    PostgresActions,
    PostgresSchedules,
):
    kind = "postgres"

    def __init__(
        self, dsn: str, *, pool_size: int = 10, statement_timeout_ms: int | None = None, optimistic_batches: bool = True
    ) -> None:
        self.dsn = check_dsn(dsn)
        # A batch goes out as a plain INSERT first, and again with ON CONFLICT only when it
        # replays a live key (jobs.py, job_enqueue_fresh): False sends every batch with ON CONFLICT.
        self.optimistic_batches = bool(optimistic_batches)
        self.pools = LoopPools(self.dsn, max_size=pool_size, statement_timeout_ms=statement_timeout_ms)

    def describe(self) -> str:
        return f"postgres {safe_dsn(self.dsn)}"

    async def open(self) -> None:
        try:
            row = await self._one(Q.schema_version.text, {})
        except psycopg.errors.UndefinedTable:
            row = None
        if row is None:
            raise JobsError(
                X_SCHEMA_MISSING,
                cause=f"no jobs schema is installed in {safe_dsn(self.dsn)}",
                fix='jobs install --dsn "$JOBS_DSN"',
            )
        if int(row["value"]) < SCHEMA_VERSION:
            raise JobsError(
                X_SCHEMA_OUTDATED,
                cause=f"schema version {row['value']} is older than {SCHEMA_VERSION}",
                fix='jobs install --dsn "$JOBS_DSN"',
            )

    async def close(self) -> None:
        self.__dict__.pop("_step_writers", None)  # each loop's step writer (steps.py)
        await self._listeners_close()
        for pool in self.pools.forget_all():
            try:
                await pool.close()
            except RuntimeError:  # a pool of a loop that is gone: its connections went with it
                pass


__all__ = ["PostgresDriver", "install_schema"]
