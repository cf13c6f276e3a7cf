"""The I2 dedupe namespace, spelled once for both drivers: a live job is unique per job name,
tenant ('' for every null tenant) and idempotency key. sql/schema.sql's job_dedupe_live_v3 index
spells the same expression, `(name, coalesce(tenant, ''), idempotency_key)`."""

from __future__ import annotations

DedupeKey = tuple[str, str, str]


def dedupe_key(name: str, tenant: str | None, key: str) -> DedupeKey:
    return (name, tenant or "", key)
