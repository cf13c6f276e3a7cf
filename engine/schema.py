"""`install_schema(dsn)`: the one install point of the jobs schema (I3)."""

from engine.drivers.postgres.schema import install_schema

__all__ = ["install_schema"]
