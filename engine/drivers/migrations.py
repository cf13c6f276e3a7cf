"""The schema's migrations: sql/migrations/NNNN_name.sql, discovered in order, and what a
database has applied of them. No database here: the runner (drivers/postgres/migrate.py) reads
the applied rows and this module says what is pending, changed or unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import cache, cached_property

from engine.drivers.sqlfiles import sql_dir
from engine.errors import X_SQL_CATALOG, JobsError

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
# The first release's schema.sql stamped this version in jobs.meta; such a database holds 0001.
BASELINE_META_VERSION = "3"


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    text: str

    @property
    def label(self) -> str:
        return f"{self.version:04d}_{self.name}"

    @cached_property
    def checksum(self) -> str:
        """sha256 of the text, line endings normalised (a Windows checkout hashes the same)."""
        import hashlib  # only a migration's runner and its status read checksums, not a worker's start

        return hashlib.sha256(self.text.replace("\r\n", "\n").encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Applied:
    version: int
    name: str
    checksum: str | None  # None: a baseline, recognised rather than applied from a file
    applied_at: datetime | None  # None: a baseline not yet recorded (no jobs.migration table yet)
    method: str  # migrate | sql | baseline


@dataclass(frozen=True)
class MigrationStatus:
    """What one database has applied of the migrations this engine knows."""

    known: tuple[Migration, ...]
    applied: tuple[Applied, ...]
    # jobs.meta's schema_version when it is not one a migration can start from (a pre-release
    # install), else None.
    foreign_version: str | None = None

    @property
    def installed(self) -> bool:
        return bool(self.applied)

    @property
    def pending(self) -> tuple[Migration, ...]:
        done = {a.version for a in self.applied}
        return tuple(m for m in self.known if m.version not in done)

    @property
    def changed(self) -> tuple[tuple[Migration, Applied], ...]:
        """Applied migrations whose file no longer hashes to what was applied."""
        files = {m.version: m for m in self.known}
        return tuple(
            (files[a.version], a)
            for a in self.applied
            if a.version in files and a.checksum is not None and a.checksum != files[a.version].checksum
        )

    @property
    def unknown(self) -> tuple[Applied, ...]:
        """Applied by a newer release: this engine has no file for them (a rollback of the code)."""
        files = {m.version for m in self.known}
        return tuple(a for a in self.applied if a.version not in files)


def status_of(applied: list[Applied], meta_version: str | None) -> MigrationStatus:
    """The status, given the rows of jobs.migration (or [] when it does not exist) and jobs.meta's
    schema_version (None when jobs.meta does not exist). Without recorded rows, a database
    stamped by the first release's schema.sql holds 0001: the baseline."""
    if not applied and meta_version == BASELINE_META_VERSION:
        first = migrations()[0]
        applied = [Applied(first.version, first.name, None, None, "baseline")]
    foreign = meta_version if not applied and meta_version is not None else None
    return MigrationStatus(migrations(), tuple(applied), foreign)


def parse_migrations(files: dict[str, str]) -> tuple[Migration, ...]:
    """{file name: text} to migrations in order: numbered from 0001 with no gap and no repeat."""
    found: dict[int, Migration] = {}
    for fname in sorted(files):
        m = _FILE.match(fname)
        if m is None:
            raise JobsError(
                X_SQL_CATALOG,
                cause=f"sql/migrations/{fname} is not named NNNN_name.sql",
                fix=f"rename sql/migrations/{fname} to the next number, e.g. 0002_add_thing.sql",
            )
        version = int(m.group(1))
        if version in found:
            raise JobsError(
                X_SQL_CATALOG,
                cause=f"sql/migrations has two migrations numbered {version:04d}: {found[version].label}.sql, {fname}",
                fix=f"renumber sql/migrations/{fname} after the last migration",
            )
        found[version] = Migration(version, m.group(2), files[fname])
    ordered = tuple(found[v] for v in sorted(found))
    for expected, mig in enumerate(ordered, start=1):
        if mig.version != expected:
            raise JobsError(
                X_SQL_CATALOG,
                cause=f"sql/migrations skips {expected:04d}: the next file is {mig.label}.sql",
                fix=f"renumber sql/migrations/{mig.label}.sql to {expected:04d}",
            )
    return ordered


@cache
def migrations() -> tuple[Migration, ...]:
    """The migrations shipped with this engine (sql/migrations, or engine/_sql/migrations in a wheel)."""
    folder = sql_dir() / "migrations"
    found = parse_migrations({p.name: p.read_text(encoding="utf-8") for p in folder.glob("*.sql")})
    if not found:
        raise JobsError(X_SQL_CATALOG, cause=f"no migrations in {folder}", fix="pip install --force-reinstall jobs")
    return found


def schema_sql() -> str:
    """Every migration's text, in order: the whole schema's DDL, for the tests that pin it."""
    return "\n".join(m.text for m in migrations())
