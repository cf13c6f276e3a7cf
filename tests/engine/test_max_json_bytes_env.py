"""JOBS_MAX_JSON_BYTES sets the size limit of every JSON value the engine stores, read from the
environment at the first use in a process; a value that is not a whole number of bytes >= 1 is
refused with the export that fixes it. Each case runs in a fresh interpreter: the limit is the
process's, read once."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import json
from engine import JobsError, connect, job

@job(name="probe", idempotency_key=lambda inp: "probe")
async def probe(ctx, inp):
    return None

eng = connect("memory://")
try:
    eng.enqueue(probe, {"blob": "x" * 3000})
    print(json.dumps({"stored": True}))
except JobsError as e:
    print(json.dumps({"code": e.code, "cause": e.cause, "fix": e.fix}))
finally:
    eng.close()
"""


def _probe(limit: str | None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "JOBS_MAX_JSON_BYTES"}
    if limit is not None:
        env["JOBS_MAX_JSON_BYTES"] = limit
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_jobs_max_json_bytes_in_the_environment_refuses_an_input_over_it_and_names_the_export_that_fits() -> None:
    got = _probe("2048")
    assert got["code"] == "X_TOO_LARGE"
    assert "over the limit of 2,048 bytes" in str(got["cause"])
    assert got["fix"] == "export JOBS_MAX_JSON_BYTES=4096"


def test_without_jobs_max_json_bytes_the_same_input_is_stored_under_the_default_limit() -> None:
    assert _probe(None) == {"stored": True}


@pytest.mark.parametrize("bad", ["0", "-5", "lots", "1.5"])
def test_a_jobs_max_json_bytes_that_is_not_a_whole_number_of_bytes_is_refused_with_its_fix(bad: str) -> None:
    got = _probe(bad)
    assert got["code"] == "X_INVALID_ARGUMENT"
    assert f"JOBS_MAX_JSON_BYTES={bad!r}" in str(got["cause"])
    assert got["fix"] == "export JOBS_MAX_JSON_BYTES=1048576"
