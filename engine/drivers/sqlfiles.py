"""Loads the named statements of sql/queries/*.sql into {name: Query}.

Each statement is headed ``-- name: job_claim :many`` and a one-line purpose. A duplicate name, a
header without a body or a bad cardinality fails loudly at load, not at the first call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from pathlib import Path

from engine.errors import X_SQL_CATALOG, JobsError

_HEADER = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s+:(one|many|exec)\s*$")


_PLACEHOLDER = re.compile(r"%%|%\((\w+)\)([sbt])")  # psycopg's: an escaped %, or a named parameter


@dataclass(frozen=True)
class Query:
    name: str
    cardinality: str  # one | many | exec
    purpose: str
    text: str
    source: str

    @cached_property
    def positional(self) -> tuple[str, tuple[str, ...]]:
        """The statement with $1..$n in place of its %(name)s parameters (and % for %%), and the
        names in that order: for a raw cursor, which skips psycopg's conversion of named
        parameters (a hot statement's client cost, bench/README.md). Each name is one $n however
        often it appears. A parameter written %(x)b or %(x)t has no positional form."""
        names: list[str] = []

        def number(m: re.Match[str]) -> str:
            name, fmt = m.group(1), m.group(2)
            if name is None:
                return "%"
            if fmt != "s":
                raise JobsError(
                    X_SQL_CATALOG,
                    cause=f"statement {self.name!r} passes %({name}){fmt}, a format a raw cursor cannot choose",
                    fix=f"write %({name})s in {self.source}, or run {self.name!r} through a named-parameter cursor",
                )
            if name not in names:
                names.append(name)
            return f"${names.index(name) + 1}"

        return _PLACEHOLDER.sub(number, self.text), tuple(names)


def sql_dir() -> Path:
    """sql/ as installed inside the wheel (engine/_sql), else the source tree's sql/."""
    packaged = resources.files("engine") / "_sql"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "sql"


def parse_queries(text: str, source: str) -> dict[str, Query]:
    out: dict[str, Query] = {}
    current: tuple[str, str] | None = None
    purpose: list[str] = []
    body: list[str] = []

    def flush() -> None:
        if current is None:
            return
        sql = "\n".join(body).strip()
        if not sql:
            raise JobsError(
                X_SQL_CATALOG,
                cause=f"statement {current[0]!r} in {source} has no body",
                fix=f"write the SQL under '-- name: {current[0]} :{current[1]}'",
            )
        out[current[0]] = Query(current[0], current[1], " ".join(purpose).strip(), sql.rstrip(";"), source)

    for line in text.splitlines():
        m = _HEADER.match(line.strip())
        if m:
            flush()
            if m.group(1) in out:
                raise JobsError(
                    X_SQL_CATALOG,
                    cause=f"statement {m.group(1)!r} is declared twice in {source}",
                    fix=f"rename one of the two '-- name: {m.group(1)}' headers",
                )
            current, purpose, body = (m.group(1), m.group(2)), [], []
        elif current is not None:
            if not body and line.startswith("--"):
                purpose.append(line.lstrip("- ").strip())
            else:
                body.append(line)
        elif line.strip().startswith("-- name:"):
            raise JobsError(
                X_SQL_CATALOG,
                cause=f"malformed header {line.strip()!r} in {source}",
                fix="-- name: statement_name :one|:many|:exec",
            )
    flush()
    return out


@cache
def load_queries() -> dict[str, Query]:
    catalog: dict[str, Query] = {}
    for path in sorted((sql_dir() / "queries").glob("*.sql")):
        for name, q in parse_queries(path.read_text(encoding="utf-8"), path.name).items():
            if name in catalog:
                raise JobsError(
                    X_SQL_CATALOG,
                    cause=f"statement {name!r} is declared in {catalog[name].source} and {path.name}",
                    fix=f"rename one of the two '-- name: {name}' headers",
                )
            catalog[name] = q
    return catalog


class Statements:
    """Attribute access to the catalog (``Q.job_claim``): an unknown name fails at first use."""

    def __getattr__(self, name: str) -> Query:
        try:
            return load_queries()[name]
        except KeyError:
            raise JobsError(
                X_SQL_CATALOG,
                cause=f"no statement named {name!r} in sql/queries",
                fix=f"add '-- name: {name} :many' to a file in sql/queries",
            ) from None


Q = Statements()
