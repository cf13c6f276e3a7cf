"""The one read surface the CLI and the console share.

``Introspector`` answers the projections of engine.projections without knowing which driver is
behind it. The operator actions are engine.actions' Operator.
"""

from engine.introspect.filters import describe_filter, group_filter, make_filter, parse_filter, parse_state
from engine.introspect.reads import DEFAULT_BUDGET, Introspector

__all__ = [
    "DEFAULT_BUDGET",
    "Introspector",
    "describe_filter",
    "group_filter",
    "make_filter",
    "parse_filter",
    "parse_state",
]
