"""Declarations, the registry and the manifest (I1, I11, I23)."""

from __future__ import annotations

import types

import pytest

from engine import JobsError, RateLimit, Registry, RetryPolicy, describe_jobs, job


async def handler(ctx, inp):  # type: ignore[no-untyped-def]
    return inp


def test_i1_a_definition_without_an_idempotency_key_is_refused() -> None:
    with pytest.raises(JobsError) as e:
        job(name="send_email")(handler)
    assert e.value.code == "X_IDEMPOTENCY_REQUIRED"
    assert "idempotency_key=lambda inp:" in e.value.fix and "send_email" in e.value.cause


@pytest.mark.parametrize("option", ["timeout", "step_timeout", "event_poll"])
@pytest.mark.parametrize("value", [0, -5, "10"])
def test_i11_ceilings_are_refused_at_declaration_when_not_positive(option: str, value: object) -> None:
    with pytest.raises(JobsError) as e:
        job(name="j", idempotency_key=lambda i: "k", **{option: value})
    assert e.value.code == "X_INVALID_DEFINITION" and option in e.value.cause


def test_a_bad_event_poll_is_refused_naming_its_default_not_a_none_it_does_not_have() -> None:
    with pytest.raises(JobsError) as e:
        job(name="j", idempotency_key=lambda i: "k", event_poll=0)
    assert "leave it out for the default, 30 s" in e.value.cause and "for none" not in e.value.cause
    with pytest.raises(JobsError) as e:
        job(name="j", idempotency_key=lambda i: "k", timeout=0)
    assert "leave it out for none" in e.value.cause


def test_i11_ceilings_are_kept_on_the_definition() -> None:
    j = job(name="j", idempotency_key=lambda i: "k", timeout=300, step_timeout=60, event_poll=5)(handler)
    assert (j.timeout, j.step_timeout, j.event_poll) == (300.0, 60.0, 5.0)


def test_an_unknown_option_is_refused_with_the_nearest_name() -> None:
    with pytest.raises(JobsError) as e:
        job(name="j", idempotency_key=lambda i: "k", queu="mail")
    assert e.value.code == "X_INVALID_DEFINITION" and "did you mean 'queue'" in e.value.cause


@pytest.mark.parametrize("bad", [{"concurrency": 0}, {"concurrency": 1.5}, {"queue": ""}, {"rate_limit": 5}])
def test_bad_options_are_refused(bad: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(JobsError):
        job(name="j", idempotency_key=lambda i: "k", **bad)


def test_a_key_function_must_return_a_non_empty_string() -> None:
    j = job(name="j", idempotency_key=lambda i: i.get("id"))(handler)
    assert j.key_for({"id": "a"}) == "a"
    with pytest.raises(JobsError) as e:
        j.key_for({})
    assert e.value.code == "X_INVALID_DEFINITION"


def test_i23_manifest_is_sorted_by_code_points_and_publishes_idempotent_never_the_key() -> None:
    names = ["b_job", "B_job", "a_job", "Ä_job", "_job"]
    handles = [
        job(name=n, idempotency_key=lambda i: "secret-key", retry=RetryPolicy(attempts=2))(handler) for n in names
    ]
    manifest = describe_jobs(handles)
    assert [m["name"] for m in manifest] == ["B_job", "_job", "a_job", "b_job", "Ä_job"]
    assert all(m["idempotent"] is True for m in manifest)
    assert "secret-key" not in repr(manifest) and all("idempotency_key" not in m for m in manifest)
    assert manifest[0]["retry"] == {
        "attempts": 2,
        "backoff": "exponential",
        "delay": 1.0,
        "max_delay": 300.0,
        "jitter": 0.0,
        "seed": None,
    }


def test_i23_registration_accepts_only_real_job_handles() -> None:
    real = job(name="real", idempotency_key=lambda i: "k")(handler)

    class LookAlike:
        name = "fake"
        queue = "default"
        idempotency_key = staticmethod(lambda i: "k")
        fn = staticmethod(handler)

    reg = Registry()
    reg.register(real)
    with pytest.raises(JobsError) as e:
        reg.register(LookAlike())
    assert e.value.code == "X_NOT_A_JOB"
    mod = types.ModuleType("app_jobs")
    mod.real = real  # type: ignore[attr-defined]
    mod.helper = lambda: None  # type: ignore[attr-defined]
    mod.fake = LookAlike()  # type: ignore[attr-defined]
    assert Registry.from_module(mod).names() == ["real"]


def test_two_definitions_with_one_name_are_refused() -> None:
    a = job(name="same", idempotency_key=lambda i: "k")(handler)
    b = job(name="same", idempotency_key=lambda i: "k")(handler)
    with pytest.raises(JobsError) as e:
        Registry([a, b])
    assert e.value.code == "X_DUPLICATE_JOB"


def test_unknown_job_name_suggests_the_nearest() -> None:
    reg = Registry([job(name="send_email", idempotency_key=lambda i: "k")(handler)])
    with pytest.raises(JobsError) as e:
        reg.get("send_emial")
    assert "did you mean 'send_email'" in e.value.cause


def test_rate_limit_is_validated() -> None:
    with pytest.raises(JobsError):
        RateLimit(limit=0, per=1.0)
