"""Which failures of a database call are the connection's (the server away, the pool exhausted),
not the statement's: a caller retries those after a backoff, or fails every row of a shared
statement alike; any other error belongs to the rows the statement wrote."""

from __future__ import annotations

import psycopg
import psycopg_pool

_CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    psycopg.OperationalError,
    psycopg.InterfaceError,
    psycopg_pool.PoolTimeout,
    ConnectionError,
    OSError,
)


def is_connection_error(exc: BaseException) -> bool:
    return isinstance(exc, _CONNECTION_ERRORS)
