"""``keyset(table, key, where=...)``: the common source, keyset pagination over an application
table by its primary key, on the application's own psycopg connection.

This is the one module of the engine that builds SQL in Python, and it cannot live in sql/: the
table, its key and its predicate are the application's, known only at declaration, and a named
statement cannot take an identifier as a parameter. So the statement is composed with
psycopg.sql (identifiers quoted by ``sql.Identifier``, never formatted into text); the values
(the cursor, the batch size, the predicate's own parameters) travel as parameters.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from psycopg import sql
from psycopg.rows import dict_row

from engine.errors import X_INVALID_DEFINITION, JobsError

_FIX = "keyset('accounts', 'id', where='plan = %(plan)s', params={'plan': 'pro'})"


def _ident(dotted: str) -> sql.Identifier:
    return sql.Identifier(*dotted.split("."))


def _check_options(where: object, params: object, columns: object) -> None:
    """``where`` is SQL text or a Composable; ``params`` a mapping of str names; ``columns`` a
    list of column names (a str would be read letter by letter)."""
    if where is not None and not isinstance(where, (str, sql.Composable)):
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"keyset where={where!r:.80} is neither SQL text nor a psycopg.sql.Composable",
            fix=_FIX,
        )
    if params is not None:
        if not isinstance(params, Mapping) or not all(isinstance(k, str) and k for k in params):
            raise JobsError(
                X_INVALID_DEFINITION,
                cause=f"keyset params={params!r:.80} is not a mapping of parameter names to values",
                fix=_FIX,
            )
    if columns is not None and (
        isinstance(columns, (str, bytes))
        or not isinstance(columns, Sequence)
        or not all(isinstance(c, str) and c for c in columns)
    ):
        raise JobsError(
            X_INVALID_DEFINITION,
            cause=f"keyset columns={columns!r:.80} is not a list of column names",
            fix="keyset('accounts', 'id', columns=['email'])",
        )


class Keyset:
    """Batches of ``table`` in ``key`` order, each after the last key of the one before, as dicts.
    ``where``: the application's own predicate (SQL text or a psycopg.sql.Composable, with
    ``%(name)s`` parameters from ``params``); it should select exactly what ``count()`` counts."""

    needs_connection = True

    def __init__(
        self,
        table: str,
        key: str = "id",
        *,
        where: str | sql.Composable | None = None,
        params: Mapping[str, Any] | None = None,
        columns: Sequence[str] | None = None,
    ) -> None:
        for what, value in (("table", table), ("key", key)):
            if not isinstance(value, str) or not value.strip() or any(not p for p in value.split(".")):
                raise JobsError(
                    X_INVALID_DEFINITION,
                    cause=f"keyset {what}={value!r} must name a column or table (schema.table allowed)",
                    fix="keyset('accounts', 'id', where='email_lower is null')",
                )
        _check_options(where, params, columns)
        if params and any(k.startswith("jobs_") for k in params):
            raise JobsError(
                X_INVALID_DEFINITION,
                cause=f"keyset params {sorted(params)!r}: names starting jobs_ are the helper's own",
                fix=_FIX,
            )
        if params and where is None:
            raise JobsError(
                X_INVALID_DEFINITION,
                cause=f"keyset params {sorted(params)!r} are given with no where= to read them",
                fix=_FIX,
            )
        if columns is not None and key not in columns:
            columns = [key, *columns]
        self.table, self.key, self.params = table, key, dict(params or {})
        self.columns = tuple(columns) if columns is not None else None
        predicate = sql.SQL(where) if isinstance(where, str) else where
        cols = sql.SQL("*") if self.columns is None else sql.SQL(", ").join(_ident(c) for c in self.columns)
        k = sql.Identifier(key)

        def statement(first: bool) -> sql.Composed:
            parts: list[sql.Composable] = [] if first else [sql.SQL("{} > %(jobs_after)s").format(k)]
            if predicate is not None:
                parts.append(sql.SQL("({})").format(predicate))
            cond = sql.SQL(" where ") + sql.SQL(" and ").join(parts) if parts else sql.SQL("")
            return sql.SQL("select {cols} from {table}{cond} order by {key} limit %(jobs_size)s").format(
                cols=cols, table=_ident(table), cond=cond, key=k
            )

        self._first, self._next = statement(True), statement(False)

    def read(self, conn: Any, *, after: Any, size: int) -> tuple[list[Any], Any]:
        params = {**self.params, "jobs_size": size}
        if after is not None:
            params["jobs_after"] = after
        with conn.cursor(row_factory=dict_row) as cur:
            cur.execute(self._first if after is None else self._next, params)
            rows = cur.fetchall()
        if not rows:
            return [], after
        last = rows[-1][self.key]
        return rows, str(last) if isinstance(last, uuid.UUID) else last

    def as_string(self, conn: Any, *, first: bool = False) -> str:
        """The statement as the server will see it (for a person reading a plan)."""
        return (self._first if first else self._next).as_string(conn)


def keyset(
    table: str,
    key: str = "id",
    *,
    where: str | sql.Composable | None = None,
    params: Mapping[str, Any] | None = None,
    columns: Sequence[str] | None = None,
) -> Keyset:
    return Keyset(table, key, where=where, params=params, columns=columns)
