"""The torture run's named statements (sql/torture/*.sql), parsed by the engine's own loader."""

from __future__ import annotations

from functools import cache

from engine.drivers.sqlfiles import Query, parse_queries, sql_dir


@cache
def torture_queries() -> dict[str, Query]:
    out: dict[str, Query] = {}
    for path in sorted((sql_dir() / "torture").glob("*.sql")):
        for name, q in parse_queries(path.read_text(encoding="utf-8"), f"torture/{path.name}").items():
            if name in out:
                raise ValueError(f"statement {name!r} is declared twice in sql/torture")
            out[name] = q
    return out


def sql(name: str) -> str:
    return torture_queries()[name].text
