"""Backfills (I22): declared data sweeps with a ledger, seven gates and a pending alarm.

``Backfills`` declares them, ``keyset`` is the common source, ``django_migrations`` and
``alembic_migrations`` read an app's migration ledger for ``requires``, and ``BackfillControl``
holds the gates, the projections and the operator actions the CLI and the console use.
"""

from engine.backfills.control import BackfillControl
from engine.backfills.declare import BackfillDefinition, Backfills, Batch, Catalog, resolve_environment
from engine.backfills.keyset import Keyset, keyset
from engine.backfills.ledgers import alembic_migrations, django_migrations
from engine.backfills.views import BackfillView, Gate, Progress, Started

__all__ = [
    "BackfillControl",
    "BackfillDefinition",
    "BackfillView",
    "Backfills",
    "Batch",
    "Catalog",
    "Gate",
    "Keyset",
    "Progress",
    "Started",
    "alembic_migrations",
    "django_migrations",
    "keyset",
    "resolve_environment",
]
