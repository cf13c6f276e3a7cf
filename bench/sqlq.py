"""The bench's named statements (sql/bench/*.sql, and the torture run's sql/torture/*.sql), parsed
by the engine's own loader."""

from __future__ import annotations

from functools import cache

from engine.drivers.sqlfiles import Query, parse_queries, sql_dir


@cache
def queries_in(folder: str) -> dict[str, Query]:
    """Every named statement of sql/FOLDER/*.sql; a name declared twice fails here."""
    out: dict[str, Query] = {}
    for path in sorted((sql_dir() / folder).glob("*.sql")):
        for name, q in parse_queries(path.read_text(encoding="utf-8"), f"{folder}/{path.name}").items():
            if name in out:
                raise ValueError(f"statement {name!r} is declared twice in sql/{folder}")
            out[name] = q
    return out


def bench_queries() -> dict[str, Query]:
    return queries_in("bench")


def sql(name: str) -> str:
    return bench_queries()[name].text
