"""`jobsctl cancel ID --children --tenant T` is held to T from its dry run to its last cancel: a job
below it of another tenant is neither counted nor cancelled (I25)."""

from __future__ import annotations

import asyncio

import pytest

from engine.api import Engine
from engine.testing import arun_due
from engine.types import JobState
from tests.engine.test_cancel_children import eng, mixed
from tests.engine.test_cli_introspect import cli

__all__ = ["eng"]  # the fixture this module uses, from the module that defines the jobs


@pytest.mark.parametrize("driver", ["postgres"], indirect=True)  # the CLI reads a database by its DSN
async def test_a_cancel_with_children_and_a_tenant_leaves_another_tenants_job_below_live(
    eng: Engine, request: pytest.FixtureRequest
) -> None:
    top = (await eng.aenqueue(mixed, {"k": "ct1"}, tenant="acme")).id
    await arun_due(eng, [mixed])
    below = {r.idempotency_key: r.id for r in await eng.operator().children(top)}
    dsn = request.getfixturevalue("pg_dsn")
    r = await asyncio.to_thread(cli, "cancel", top, "--children", "--tenant", "acme", "--yes", "--dsn", dsn)
    assert r.exit_code == 0, r.output
    assert "and the 1 live jobs below it" in r.stdout
    assert (await eng.aget(below["ct1/mine"])).state is JobState.CANCELLED
    assert (await eng.aget(below["ct1/x"])).state is JobState.READY
