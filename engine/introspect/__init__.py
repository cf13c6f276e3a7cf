"""The one read surface the CLI and the console share, and the operator actions.

``Introspector`` answers the projections of engine.projections; ``Operator`` takes the audited,
fenced, tenant-aware actions. Neither knows which driver is behind it.
"""

from engine.introspect.actions import Operator
from engine.introspect.filters import describe_filter, make_filter, parse_filter, parse_state
from engine.introspect.reads import DEFAULT_BUDGET, Introspector

__all__ = [
    "DEFAULT_BUDGET",
    "Introspector",
    "Operator",
    "describe_filter",
    "make_filter",
    "parse_filter",
    "parse_state",
]
