"""The jobs schema's migrations, from Python: `migrate(dsn)` applies what is pending (what
`jobsctl migrate` runs), `migration_status(dsn)` says what is applied and pending, and
`migration_sql(since)` is the script of the migrations after a version, for another tool to run.
`install_schema` is `migrate` under the first release's name."""

from engine.drivers.migrations import Migration, MigrationStatus, migrations
from engine.drivers.postgres.migrate import migrate, migration_status, offline_sql, pending_sql


def migration_sql(since: int = 0, until: int | None = None) -> str:
    """The SQL of the migrations after version ``since`` up to ``until`` (default: the last this
    engine ships), each recorded in jobs.migration. A wrapper in another tool's migration names
    both, so upgrading the jobs package never changes what an old wrapper applies."""
    return offline_sql(since, until)


def install_schema(dsn: str) -> None:
    migrate(dsn)


__all__ = [
    "Migration",
    "MigrationStatus",
    "install_schema",
    "migrate",
    "migration_sql",
    "migration_status",
    "migrations",
    "pending_sql",
]
