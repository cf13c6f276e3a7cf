"""Reading an application's migration ledger, for a backfill's ``requires`` gate.

A reader is any ``conn -> collection of applied migration names``. Two come ready-made:

- ``django_migrations``: Django's ``django_migrations`` table records every applied migration,
  so a name is ``"app.0042_name"`` and the reader is one select.
- ``alembic_migrations(...)``: ``alembic_version`` holds only the HEADS, so whether a revision is
  applied means walking the revision graph down from each head. The graph comes from Alembic's
  own ``ScriptDirectory`` when alembic is importable (``script_location=``), or is given as
  ``{revision: down_revision(s)}`` (``graph=``) by an app that keeps alembic out of its workers.

The statements are named in sql/queries/backfills.sql and run on the application's connection.
Neither Django nor Alembic is a dependency of the engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from psycopg.rows import tuple_row

from engine.drivers.sqlfiles import Q
from engine.errors import X_INVALID_DEFINITION, JobsError


def _rows(conn: Any, text: str) -> list[tuple[Any, ...]]:
    with conn.cursor(row_factory=tuple_row) as cur:
        cur.execute(text)
        return list(cur.fetchall())


def django_migrations(conn: Any) -> set[str]:
    """Every migration Django applied, as ``"app.name"`` (``requires="accounts.0042_email_lower"``)."""
    return {f"{app}.{name}" for app, name in _rows(conn, Q.django_migrations_applied.text)}


django_migrations.migrate_command = "python manage.py migrate"  # type: ignore[attr-defined]

Graph = Mapping[str, str | Iterable[str] | None]


def ancestors(heads: Iterable[str], graph: Graph) -> set[str]:
    """The heads and every revision below them (a merge revision has several down revisions)."""
    seen: set[str] = set()
    todo = list(heads)
    while todo:
        rev = todo.pop()
        if rev in seen:
            continue
        seen.add(rev)
        down = graph.get(rev)
        if down is None:
            continue
        todo.extend([down] if isinstance(down, str) else list(down))
    return seen


def _alembic_graph(script_location: str) -> dict[str, tuple[str, ...]]:
    from alembic.script import ScriptDirectory  # optional: imported only for this reader

    script = ScriptDirectory(script_location)
    graph: dict[str, tuple[str, ...]] = {}
    for rev in script.walk_revisions():
        down = rev.down_revision
        deps = rev.dependencies or ()
        below = ([] if down is None else [down] if isinstance(down, str) else list(down)) + (
            [deps] if isinstance(deps, str) else list(deps)
        )
        graph[rev.revision] = tuple(below)
    return graph


class alembic_migrations:  # noqa: N801 (used like a function: migrations=alembic_migrations("migrations"))
    """Applied Alembic revisions: the heads in ``alembic_version`` and everything below them."""

    migrate_command = "alembic upgrade head"

    def __init__(self, script_location: str | None = None, *, graph: Graph | None = None) -> None:
        if (script_location is None) == (graph is None):
            raise JobsError(
                X_INVALID_DEFINITION,
                cause="alembic_migrations needs one of script_location= (read with alembic) or graph=",
                fix="Backfills(migrations=alembic_migrations('migrations'))",
            )
        if script_location is not None:
            try:
                import alembic.script  # noqa: F401
            except ImportError:
                raise JobsError(
                    X_INVALID_DEFINITION,
                    cause=f"alembic_migrations({script_location!r}) reads the revision graph with alembic, "
                    "which is not importable here",
                    fix="alembic_migrations(graph={'rev2': 'rev1', 'rev1': None})",
                ) from None
        self.script_location = script_location
        self._graph: Graph | None = graph

    def graph(self) -> Graph:
        if self._graph is None:
            assert self.script_location is not None
            self._graph = _alembic_graph(self.script_location)
        return self._graph

    def __call__(self, conn: Any) -> set[str]:
        heads = [r[0] for r in _rows(conn, Q.alembic_heads.text)]
        return ancestors(heads, self.graph())
