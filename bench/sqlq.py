"""The bench's named statements (sql/bench/*.sql), parsed by the engine's own loader."""

from __future__ import annotations

from functools import cache

from engine.drivers.sqlfiles import Query, parse_queries, sql_dir


@cache
def bench_queries() -> dict[str, Query]:
    out: dict[str, Query] = {}
    for path in sorted((sql_dir() / "bench").glob("*.sql")):
        for name, q in parse_queries(path.read_text(encoding="utf-8"), f"bench/{path.name}").items():
            if name in out:
                raise ValueError(f"statement {name!r} is declared twice in sql/bench")
            out[name] = q
    return out


def sql(name: str) -> str:
    return bench_queries()[name].text
