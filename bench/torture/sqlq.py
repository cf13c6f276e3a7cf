"""The torture run's named statements (sql/torture/*.sql)."""

from __future__ import annotations

from bench.sqlq import queries_in


def sql(name: str) -> str:
    return queries_in("torture")[name].text
