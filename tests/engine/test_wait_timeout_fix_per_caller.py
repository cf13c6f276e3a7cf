"""A wait past its timeout (X_WAIT_TIMEOUT) is fixed by one thing to type, fitted to who waited:
the Python call again for longer, or `jobsctl wait ID --timeout Ns`; where to read more (`jobsctl
why`, `jobsctl show`) is in the cause."""

from __future__ import annotations

import asyncio
import json

import pytest

from engine.api import Engine
from engine.drivers.memory import MemoryDriver
from engine.errors import X_WAIT_TIMEOUT, JobsError
from engine.types import JobState
from tests.engine.test_cli_introspect import cli, seed
from tests.engine.test_worker import fast


def test_a_python_wait_past_its_timeout_is_fixed_by_the_call_again_for_longer() -> None:
    async def go() -> JobsError:
        eng = Engine(MemoryDriver())
        r = await eng.aenqueue(fast, {"n": 1}, delay=3600)
        with pytest.raises(JobsError) as err:
            await eng.aoutcome(r.id, timeout=0)
        assert f"jobsctl why {r.id} says what it waits for" in err.value.cause
        assert err.value.fix == f"await eng.aoutcome({r.id!r}, timeout=60)"
        return err.value

    assert asyncio.run(go()).code == X_WAIT_TIMEOUT


def test_jobsctl_wait_past_its_timeout_is_fixed_by_the_command_again_for_longer(pg_dsn: str) -> None:
    (ready,) = seed(pg_dsn, JobState.READY, tenant="acme")
    r = cli("wait", ready.id, "--timeout", "0s", "--tenant", "acme", "--dsn", pg_dsn)
    assert r.exit_code == 7 and "error X_WAIT_TIMEOUT" in r.stderr
    assert f"  fix: jobsctl wait {ready.id} --timeout 60s --tenant acme\n" in r.stderr
    r = cli("wait", ready.id, "--timeout", "0s", "--dsn", pg_dsn, "--json")
    [said] = json.loads(r.stdout)
    assert said["error"]["fix"] == f"jobsctl wait {ready.id} --timeout 60s"
