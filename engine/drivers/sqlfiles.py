"""Loads the named statements of sql/queries/*.sql into {name: Query}.

Each statement is headed ``-- name: worker_claim :many`` and a one-line purpose. A text several
statements share is a fragment, headed ``-- fragment: job_filter``, and a statement takes it in
with a line ``-- include: job_filter`` (indented as that line; a fragment of any file of
sql/queries, which may include fragments of its own). A duplicate name, a header without a body,
a bad cardinality, an include of no fragment or a fragment that includes itself fails loudly at
load, not at the first call.

A header ending in ``generic`` (``-- name: worker_claim :many generic``) marks a statement that
always runs its generic plan (plan_generic, in the same round trip and transaction): one whose
plan is the same for every parameter and costs more to make than to run. PostgreSQL's plan cache
would otherwise plan it anew on every call for good once a replanning after a statistics change
costs its generic plan above its custom ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cache, cached_property
from importlib import resources
from pathlib import Path

from engine.errors import X_SQL_CATALOG, JobsError

_HEADER = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s+:(one|many|exec)(\s+generic)?\s*$")
_FRAGMENT = re.compile(r"^--\s*fragment:\s*([a-z_][a-z0-9_]*)\s*$")
_INCLUDE = re.compile(r"^(\s*)--\s*include:\s*([a-z_][a-z0-9_]*)\s*$")


_PLACEHOLDER = re.compile(r"%%|%\((\w+)\)([sbt])")  # psycopg's: an escaped %, or a named parameter


@dataclass(frozen=True)
class Query:
    name: str
    cardinality: str  # one | many | exec
    purpose: str
    text: str
    source: str
    generic: bool = False  # the header ends in ``generic``: always the statement's generic plan

    @cached_property
    def positional(self) -> tuple[str, tuple[str, ...]]:
        """The statement with $1..$n in place of its %(name)s parameters (and % for %%), and the
        names in that order: for a raw cursor, which skips psycopg's conversion of named
        parameters (a hot statement's client cost: python -m bench.ab --only single). Each name is
        one $n however often it appears. A parameter written %(x)b or %(x)t has no positional form."""
        names: list[str] = []

        def number(m: re.Match[str]) -> str:
            name, fmt = m.group(1), m.group(2)
            if name is None:
                return "%"
            if fmt != "s":
                raise JobsError(
                    X_SQL_CATALOG,
                    cause=f"statement {self.name!r} passes %({name}){fmt}, a format a raw cursor cannot choose "
                    "(a statement that needs it runs through a named-parameter cursor instead)",
                    fix=f"write %({name})s in {self.source}",
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


@dataclass(frozen=True)
class Fragment:
    name: str
    text: str  # dedented: an include indents it as its own line
    source: str


def _catalog_error(cause: str, fix: str) -> JobsError:
    return JobsError(X_SQL_CATALOG, cause=cause, fix=fix)


def parse_file(text: str, source: str) -> tuple[dict[str, Query], dict[str, Fragment]]:
    """One file's statements (their includes not yet resolved) and fragments."""
    out: dict[str, Query] = {}
    fragments: dict[str, Fragment] = {}
    current: tuple[str, str, bool] | None = None  # (name, cardinality, generic); cardinality "" for a fragment
    purpose: list[str] = []
    body: list[str] = []

    def flush() -> None:
        if current is None:
            return
        name, cardinality, generic = current
        sql = "\n".join(body).strip()
        if not sql:
            header = f"-- fragment: {name}" if not cardinality else f"-- name: {name} :{cardinality}"
            raise _catalog_error(
                f"{'fragment' if not cardinality else 'statement'} {name!r} in {source} has no body",
                f"write the SQL under '{header}'",
            )
        if not cardinality:
            fragments[name] = Fragment(name, _dedent(body), source)
        else:
            out[name] = Query(name, cardinality, " ".join(purpose).strip(), sql.rstrip(";"), source, generic)

    for line in text.splitlines():
        stripped = line.strip()
        m, f = _HEADER.match(stripped), _FRAGMENT.match(stripped)
        if m or f:
            flush()
            name = (m or f).group(1)  # type: ignore[union-attr]
            if name in out or name in fragments:
                raise _catalog_error(
                    f"{'statement' if m else 'fragment'} {name!r} is declared twice in {source}",
                    f"rename one of the two '-- {'name' if m else 'fragment'}: {name}' headers",
                )
            current, purpose, body = (name, m.group(2) if m else "", bool(m and m.group(3))), [], []
        elif current is not None:
            if not body and line.startswith("--") and not _INCLUDE.match(line):
                purpose.append(line.lstrip("- ").strip())
            else:
                body.append(line)
        elif stripped.startswith(("-- name:", "-- fragment:")):
            raise _catalog_error(
                f"malformed header {stripped!r} in {source}",
                "-- name: statement_name :one|:many|:exec [generic], or -- fragment: fragment_name",
            )
    flush()
    return out, fragments


def _dedent(lines: list[str]) -> str:
    kept = [ln for ln in lines if ln.strip()]
    indent = min(len(ln) - len(ln.lstrip()) for ln in kept)
    return "\n".join(ln[indent:] for ln in kept)


def resolve(query: Query, fragments: dict[str, Fragment]) -> Query:
    """``query`` with each ``-- include: NAME`` line replaced by that fragment, indented as the line
    (a fragment's own includes too; a fragment that includes itself, however deep, is refused)."""
    if "include:" not in query.text:
        return query
    return replace(query, text=_expand(query.text, fragments, f"statement {query.name!r} in {query.source}", ()))


def _expand(text: str, fragments: dict[str, Fragment], owner: str, within: tuple[str, ...]) -> str:
    lines: list[str] = []
    for line in text.splitlines():
        m = _INCLUDE.match(line)
        if m is None:
            lines.append(line)
            continue
        frag = fragments.get(m.group(2))
        if frag is None:
            raise _catalog_error(
                f"{owner} includes {m.group(2)!r}, a fragment no file declares",
                f"declare '-- fragment: {m.group(2)}' in a file of sql/queries, or fix the include's name",
            )
        if frag.name in within:
            raise _catalog_error(
                f"fragment {frag.name!r} in {frag.source} includes itself ({' -> '.join((*within, frag.name))})",
                f"write the included text into '-- fragment: {frag.name}' itself",
            )
        body = _expand(frag.text, fragments, f"fragment {frag.name!r} in {frag.source}", (*within, frag.name))
        lines += [m.group(1) + fl for fl in body.splitlines()]
    return "\n".join(lines)


def parse_queries(text: str, source: str, fragments: dict[str, Fragment] | None = None) -> dict[str, Query]:
    """One file's statements, each include resolved from its own fragments and ``fragments``."""
    queries, own = parse_file(text, source)
    known = {**(fragments or {}), **own}
    return {name: resolve(q, known) for name, q in queries.items()}


@cache
def load_queries() -> dict[str, Query]:
    raw: dict[str, Query] = {}
    fragments: dict[str, Fragment] = {}
    for path in sorted((sql_dir() / "queries").glob("*.sql")):
        queries, frags = parse_file(path.read_text(encoding="utf-8"), path.name)
        for name, q in queries.items():
            if name in raw:
                raise _catalog_error(
                    f"statement {name!r} is declared in {raw[name].source} and {path.name}",
                    f"rename one of the two '-- name: {name}' headers",
                )
            raw[name] = q
        for name, frag in frags.items():
            if name in fragments:
                raise _catalog_error(
                    f"fragment {name!r} is declared in {fragments[name].source} and {path.name}",
                    f"rename one of the two '-- fragment: {name}' headers",
                )
            fragments[name] = frag
    return {name: resolve(q, fragments) for name, q in raw.items()}


class Statements:
    """Attribute access to the catalog (``Q.worker_claim``): an unknown name fails at first use."""

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
