"""The shortest lease the engine takes (MIN_LEASE_SECONDS, one second): a relay's claim of outbox
rows and a job's claim by a worker are refused below it when declared (RelayConfig, WorkerConfig)
and on the command line, with an error naming the flag. A lease shorter than the work it covers
lapses under it: another relay claims the rows again mid-publish and publishes them twice, the
rescuer hands a running job to another worker. Every refusal comes before the database is touched
(the DSN points where nothing answers)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from engine.cli import app
from engine.errors import X_INVALID_ARGUMENT, X_INVARIANT, JobsError
from engine.runtime.worker_config import MIN_LEASE_SECONDS, WorkerConfig
from engine.services.relay import MIN_LEASE_MS, RelayConfig

NOWHERE = ["--dsn", "postgresql://nobody@127.0.0.1:1/nowhere"]
WORKER_APP = "tests.engine.test_worker_app"


def test_the_shortest_lease_is_one_second_for_relays_and_workers_alike() -> None:
    assert MIN_LEASE_MS == 1000 and MIN_LEASE_SECONDS == 1.0


@pytest.mark.parametrize("short", [1, 5, 999])
def test_a_relay_lease_shorter_than_the_floor_is_refused_at_declaration(short: int) -> None:
    with pytest.raises(JobsError) as err:
        RelayConfig(lease_ms=short)
    assert err.value.code == X_INVALID_ARGUMENT
    assert f"lease_ms={short} is below 1000 ms" in err.value.cause and "publish" in err.value.cause
    assert err.value.fix == "RelayConfig(lease_ms=30000)"


def test_a_relay_lease_at_the_floor_is_taken_and_a_non_positive_one_is_still_the_invariant() -> None:
    assert RelayConfig(lease_ms=1000).lease == 1000 and RelayConfig(lease_ms=1000.0).lease == 1000
    with pytest.raises(JobsError) as err:
        RelayConfig(lease_ms=0)
    assert err.value.code == X_INVARIANT  # I19: engine/drivers/outbox_lease.py


@pytest.mark.parametrize("short", ["5", "999"])
def test_jobsctl_relay_refuses_a_short_lease_naming_the_flag(short: str) -> None:
    r = CliRunner().invoke(app, ["relay", *NOWHERE, "--lease-ms", short])
    assert r.exit_code == 1, (r.exit_code, r.stderr)
    assert f"error X_INVALID_ARGUMENT: --lease-ms {short} is below 1000 ms" in r.stderr
    assert "  fix: jobsctl relay --lease-ms 30000" in r.stderr and "X_DB_UNREACHABLE" not in r.stderr


def test_jobsctl_relay_refuses_a_short_lease_as_json_with_json() -> None:
    r = CliRunner().invoke(app, ["relay", *NOWHERE, "--lease-ms", "5", "--json"])
    assert r.exit_code == 1
    err = json.loads(r.stderr.strip())["error"]
    assert err["code"] == X_INVALID_ARGUMENT and err["cause"].startswith("--lease-ms 5 is below 1000 ms")
    assert err["fix"] == "jobsctl relay --lease-ms 30000"


@pytest.mark.parametrize("short", [0.001, 0.5, 0.999])
def test_a_worker_lease_shorter_than_the_floor_is_refused_at_declaration(short: float) -> None:
    with pytest.raises(JobsError) as err:
        WorkerConfig(lease_seconds=short)
    assert err.value.code == X_INVALID_ARGUMENT and f"lease_seconds={short!r} is below 1 s" in err.value.cause
    assert err.value.fix == "jobsctl worker MODULE --lease-seconds 30"
    assert WorkerConfig(lease_seconds=MIN_LEASE_SECONDS).lease_seconds == 1.0


def test_jobsctl_worker_refuses_a_short_lease_naming_the_flag_and_the_command() -> None:
    r = CliRunner().invoke(app, ["worker", WORKER_APP, *NOWHERE, "--lease-seconds", "0.005"])
    assert r.exit_code == 1, (r.exit_code, r.stderr)
    assert "error X_INVALID_ARGUMENT: --lease-seconds 0.005 is below 1 s" in r.stderr
    assert f"  fix: jobsctl worker {WORKER_APP} --lease-seconds 30" in r.stderr and "X_DB_UNREACHABLE" not in r.stderr
