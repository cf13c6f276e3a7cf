"""`jobsctl describe` and its `--check`: the manifest holds every declared option a deploy's
reviewer must see change (the whole retry policy, the priority, whether a rate limit is per key),
so editing one is drift; and it is the same text for the same declarations."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.cli import app
from engine.jobs import JobDefinition, RateLimit, describe_jobs, job
from engine.retry import RetryPolicy

# JobDefinition fields the manifest leaves out, each for a reason: the handler is code (reviewed as
# code), the key function is published only as "idempotent", and async-ness is the handler's own.
NOT_PUBLISHED = {"fn", "idempotency_key", "is_async"}


def handler(ctx, inp):  # type: ignore[no-untyped-def]
    return None


def _declare(**options) -> JobDefinition:  # type: ignore[no-untyped-def]
    return job(name="charge", idempotency_key=lambda inp: "k", **options)(handler)


def test_every_declared_option_of_a_job_is_in_its_manifest_entry() -> None:
    """A field added to JobDefinition fails here until the manifest publishes it or says why not."""
    (entry,) = describe_jobs([_declare()])
    fields = {f.name for f in dataclasses.fields(JobDefinition)}
    assert fields - NOT_PUBLISHED <= set(entry), sorted(fields - NOT_PUBLISHED - set(entry))
    assert set(entry) - fields == {"idempotent"}
    policy = {f.name for f in dataclasses.fields(RetryPolicy)}
    assert set(entry["retry"]) == policy


def test_the_manifest_shows_the_retry_delays_priority_and_a_keyed_rate_limit() -> None:
    handle = _declare(
        priority=5,
        retry=RetryPolicy(attempts=4, backoff="linear", delay=2, max_delay=60, jitter=0.2, seed=9),
        rate_limit=RateLimit(limit=10, per=1, key=lambda inp, tenant: tenant or "-"),
    )
    (entry,) = describe_jobs([handle])
    assert entry["priority"] == 5
    assert entry["retry"] == {
        "attempts": 4,
        "backoff": "linear",
        "delay": 2.0,
        "max_delay": 60.0,
        "jitter": 0.2,
        "seed": 9,
    }
    assert entry["rate_limit"] == {"limit": 10, "per": 1.0, "keyed": True}
    (plain,) = describe_jobs([_declare(rate_limit=RateLimit(limit=10, per=1.0))])
    assert plain["rate_limit"] == {"limit": 10, "per": 1.0, "keyed": False}
    assert plain["priority"] == 0
    assert plain["retry"] == {
        "attempts": 3,
        "backoff": "exponential",
        "delay": 1.0,
        "max_delay": 300.0,
        "jitter": 0.0,
        "seed": None,
    }


BASE_POLICY = RetryPolicy(jitter=0.2)
BASE_RATE = RateLimit(limit=1, per=1.0)


@pytest.mark.parametrize(
    "edit",
    [
        {"retry": dataclasses.replace(BASE_POLICY, attempts=5)},
        {"retry": dataclasses.replace(BASE_POLICY, delay=5.0)},
        {"retry": dataclasses.replace(BASE_POLICY, max_delay=60.0)},
        {"retry": dataclasses.replace(BASE_POLICY, jitter=0.3)},
        {"retry": dataclasses.replace(BASE_POLICY, seed=1)},
        {"retry": dataclasses.replace(BASE_POLICY, backoff="fixed")},
        {"priority": 10},
        {"rate_limit": dataclasses.replace(BASE_RATE, key=lambda inp, tenant: "k")},
    ],
    ids=["attempts", "delay", "max_delay", "jitter", "seed", "backoff", "priority", "rate-limit-keyed"],
)
def test_each_edit_of_a_declared_option_changes_the_manifest(edit: dict) -> None:  # type: ignore[type-arg]
    base = {"retry": BASE_POLICY, "rate_limit": BASE_RATE}
    before = describe_jobs([_declare(**base)])
    after = describe_jobs([_declare(**{**base, **edit})])
    assert before != after


def test_an_int_and_a_float_spelling_of_one_value_is_no_drift() -> None:
    """delay=2 and delay=2.0 are one policy: the manifest does not call a rewrite of the literal a change."""
    a = _declare(retry=RetryPolicy(delay=2, max_delay=60), rate_limit=RateLimit(limit=3, per=2))
    b = _declare(retry=RetryPolicy(delay=2.0, max_delay=60.0), rate_limit=RateLimit(limit=3, per=2.0))
    assert json.dumps(describe_jobs([a]), sort_keys=True) == json.dumps(describe_jobs([b]), sort_keys=True)


APP = textwrap.dedent("""
    from engine import job, RetryPolicy

    @job(name="charge", idempotency_key=lambda inp: f"c:{{inp['id']}}", retry=RetryPolicy({retry}))
    async def charge(ctx, inp):
        return None
""")


def test_describe_check_reports_drift_when_only_the_retry_delays_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "manifest_app_v1.py").write_text(APP.format(retry="attempts=5, delay=1.0, max_delay=300.0"))
    (tmp_path / "manifest_app_v2.py").write_text(APP.format(retry="attempts=5, delay=30.0, max_delay=3600.0"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    first = runner.invoke(app, ["describe", "--app", "manifest_app_v1"])
    assert first.exit_code == 0, first.output
    assert first.stdout == runner.invoke(app, ["describe", "--app", "manifest_app_v1"]).stdout  # deterministic
    entry = json.loads(first.stdout)[0]
    assert list(entry) == sorted(entry) and list(entry["retry"]) == sorted(entry["retry"])
    committed = tmp_path / "jobs.manifest.json"
    committed.write_text(first.stdout)
    assert runner.invoke(app, ["describe", "--app", "manifest_app_v1", "--check", str(committed)]).exit_code == 0
    r = runner.invoke(app, ["describe", "--app", "manifest_app_v2", "--check", str(committed)])
    assert r.exit_code == 4, r.output
    assert '-      "delay": 1.0,' in r.stdout and '+      "delay": 30.0,' in r.stdout
    assert '+      "max_delay": 3600.0,' in r.stdout
    assert "drifted" in r.stderr and f"jobsctl describe --app manifest_app_v2 > {committed}" in r.stderr
