"""PostgresDriver: the Driver protocol over psycopg 3, every statement named in sql/queries.

One class per area (engine/drivers/base.py, AREAS), each on PostgresBase (the pools and the one
way to run a named statement); no area calls another's helpers, so their order here means nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

from engine.drivers.postgres.actions import PostgresActions
from engine.drivers.postgres.audit import PostgresAudit
from engine.drivers.postgres.backfills import PostgresBackfills
from engine.drivers.postgres.base import PostgresBase
from engine.drivers.postgres.dsn import check_dsn, safe_dsn
from engine.drivers.postgres.introspect import PostgresIntrospect
from engine.drivers.postgres.jobs import PostgresJobs
from engine.drivers.postgres.limits import PostgresLimits
from engine.drivers.postgres.maintenance import PostgresMaintenance
from engine.drivers.postgres.migrate import check_current
from engine.drivers.postgres.outbox import PostgresOutbox
from engine.drivers.postgres.pool import close_on
from engine.drivers.postgres.schedules import PostgresSchedules
from engine.drivers.postgres.steps import PostgresSteps
from engine.drivers.postgres.workers import PostgresWorkers
from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.forks import per_process
from engine.options import LONGEST_TIMEOUT_MS


def check_options(pool_size: Any, statement_timeout_ms: Any, optimistic_batches: Any, prepared: Any) -> None:
    """The driver's options, refused at ``connect`` when they could not be meant: a pool of fewer
    than one connection, a statement timeout that is not a whole number of milliseconds >= 1 (0.5
    would reach the server as 0, which is no timeout at all), a flag that is not a bool."""
    whole = [("pool_size", pool_size, 10)]
    if statement_timeout_ms is not None:
        whole.append(("statement_timeout_ms", statement_timeout_ms, 10_000))
    for name, value, example in whole:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"connect option {name}={value!r} must be a whole number >= 1"
                + (" (None: no statement timeout)" if name == "statement_timeout_ms" else ""),
                fix=f"connect(dsn, {name}={example})",
            )
    if statement_timeout_ms is not None and statement_timeout_ms > LONGEST_TIMEOUT_MS:
        # The server refuses the connection itself over a larger value, which would read as unreachable.
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"connect option statement_timeout_ms={statement_timeout_ms!r} is past PostgreSQL's longest "
            f"statement timeout, {LONGEST_TIMEOUT_MS} ms (about 24 days; None: no statement timeout)",
            fix="connect(dsn, statement_timeout_ms=None)",
        )
    for name, value in (("optimistic_batches", optimistic_batches), ("prepared_statements", prepared)):
        if not isinstance(value, bool):
            raise JobsError(
                X_INVALID_ARGUMENT,
                cause=f"connect option {name}={value!r} must be True or False",
                fix=f"connect(dsn, {name}=False)",
            )


class PostgresDriver(
    PostgresJobs,
    PostgresWorkers,
    PostgresLimits,
    PostgresMaintenance,
    PostgresSteps,
    PostgresIntrospect,
    PostgresActions,
    PostgresBackfills,
    PostgresOutbox,
    PostgresSchedules,
    PostgresAudit,
):
    kind = "postgres"

    def __init__(
        self,
        dsn: str,
        *,
        pool_size: int = 10,
        statement_timeout_ms: int | None = None,
        optimistic_batches: bool = True,
        prepared_statements: bool = True,
    ) -> None:
        check_options(pool_size, statement_timeout_ms, optimistic_batches, prepared_statements)
        PostgresBase.__init__(
            self,
            check_dsn(dsn),
            pool_size=pool_size,
            statement_timeout_ms=statement_timeout_ms,
            prepared_statements=prepared_statements,
        )
        # Each area's own state, set here in one place.
        self.optimistic_batches = bool(optimistic_batches)  # jobs: a batch tries the plain INSERT first
        self._listen_conns = {}  # workers: each loop's LISTEN connection
        self._presence = {}  # workers: each worker's presence session
        self._step_writers = {}  # steps: each loop's group writer
        self._outbox_listen_conns = {}  # outbox: each loop's LISTEN connection for committed stages
        self.pools.on_loop_end = self._close_loop
        per_process(self)

    async def _close_loop(self) -> None:
        """What this driver holds for the running loop, closed as the loop ends (LoopPools'
        end watch): its LISTEN connections, its step writer, its pool and lead connection."""
        self._step_writers.pop(asyncio.get_running_loop(), None)
        await self._listeners_close()
        await self._outbox_listeners_close()
        await self.pools.close_current()

    def forsake(self) -> list[Any]:
        """In a forked child (engine/forks.py): the parent's sessions and writers, forgotten (its
        pools are LoopPools' own)."""
        held: list[Any] = [self._listen_conns, self._presence, self._step_writers, self._outbox_listen_conns]
        self._listen_conns, self._presence, self._step_writers, self._outbox_listen_conns = {}, {}, {}, {}
        return held

    def describe(self) -> str:
        return f"postgres {safe_dsn(self.dsn)}"

    async def open(self) -> None:
        """Refuse a database with no schema (X_SCHEMA_MISSING) or with migrations pending
        (X_SCHEMA_OUTDATED), each naming `jobsctl migrate`."""
        await check_current(self.dsn, self._row, self._rows)

    async def reset(self) -> None:
        self.pools.reset_current()

    async def close(self) -> None:
        self._step_writers.clear()
        await self._listeners_close()
        await self._presence_close()
        await self._outbox_listeners_close()
        for loop, closable in self.pools.forget_all():
            await close_on(loop, closable)
        await self.pools.closed_behind()


__all__ = ["PostgresDriver"]
