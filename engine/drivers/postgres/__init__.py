"""PostgresDriver: the Driver protocol over psycopg 3, every statement named in sql/queries."""

from __future__ import annotations

from engine.drivers.postgres.actions import PostgresActions
from engine.drivers.postgres.jobs import PostgresJobs
from engine.drivers.postgres.limits import PostgresLimits
from engine.drivers.postgres.maintenance import PostgresMaintenance
from engine.drivers.postgres.migrate import check_current
from engine.drivers.postgres.pool import LoopPools, check_dsn, safe_dsn
from engine.drivers.postgres.steps import PostgresSteps
from engine.drivers.postgres.workers import PostgresWorkers


class PostgresDriver(
    PostgresJobs, PostgresWorkers, PostgresLimits, PostgresMaintenance, PostgresSteps, PostgresActions
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
        """Refuse a database with no schema (X_SCHEMA_MISSING) or with migrations pending
        (X_SCHEMA_OUTDATED), each naming `jobs migrate`."""
        await check_current(self.dsn, self._one, self._all)

    async def close(self) -> None:
        self.__dict__.pop("_step_writers", None)  # each loop's step writer (steps.py)
        await self._listeners_close()
        for pool in self.pools.forget_all():
            try:
                await pool.close()
            except RuntimeError:  # a pool of a loop that is gone: its connections went with it
                pass


__all__ = ["PostgresDriver"]
