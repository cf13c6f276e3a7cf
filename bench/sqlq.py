"""The bench's named statements (sql/bench/*.sql, and the torture run's sql/torture/*.sql), parsed
by the engine's own loader."""

from __future__ import annotations

from functools import cache

from engine.drivers.sqlfiles import Fragment, Query, parse_file, parse_queries, sql_dir


@cache
def queries_in(folder: str) -> dict[str, Query]:
    """Every named statement of sql/FOLDER/*.sql, each include resolved from the fragments of any
    file of the folder (as the engine's catalog does for sql/queries); a name declared twice fails
    here."""
    files = [(f"{folder}/{p.name}", p.read_text(encoding="utf-8")) for p in sorted((sql_dir() / folder).glob("*.sql"))]
    fragments: dict[str, Fragment] = {}
    for source, text in files:
        for name, frag in parse_file(text, source)[1].items():
            if name in fragments:
                raise ValueError(f"fragment {name!r} is declared twice in sql/{folder}")
            fragments[name] = frag
    out: dict[str, Query] = {}
    for source, text in files:
        for name, q in parse_queries(text, source, fragments).items():
            if name in out:
                raise ValueError(f"statement {name!r} is declared twice in sql/{folder}")
            out[name] = q
    return out


def fragment(folder: str, name: str) -> str:
    """The text of fragment ``name`` of sql/FOLDER (for a test that writes its own statement)."""
    for path in sorted((sql_dir() / folder).glob("*.sql")):
        frag = parse_file(path.read_text(encoding="utf-8"), path.name)[1].get(name)
        if frag is not None:
            return frag.text
    raise KeyError(f"no fragment {name!r} in sql/{folder}")


def bench_queries() -> dict[str, Query]:
    return queries_in("bench")


def sql(name: str) -> str:
    return bench_queries()[name].text
