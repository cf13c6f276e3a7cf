"""Declarations the worker, the scheduler or PostgreSQL could not keep are refused where they are
written (a job's name and queue, its ceilings, its handler and key function, a rate limit, a
task's zone and catch-up bound, a retry seed, the error tables, a Backfills), each with its
code, a cause naming the bad value, and a fix."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from engine.backfills.declare import Backfills
from engine.errors import _CODES, JobsError, register_error_codes
from engine.jobs import RateLimit, job
from engine.retry import _RETRY_TABLE, LONGEST_DELAY, RetryPolicy, register_error_retry
from engine.tasks import task
from engine.text import MAX_NAME


def handler(ctx: Any, inp: Any) -> None:
    return None


def key(inp: Any) -> str:
    return "k"


def refused(call: Any, code: str = "X_INVALID_DEFINITION") -> JobsError:
    with pytest.raises(JobsError) as e:
        call()
    assert e.value.code == code and e.value.fix
    return e.value


# --- names and queues -----------------------------------------------------------------------


@pytest.mark.parametrize("name", [123, "", "   ", " mail", "mail ", "a\x00b", "x" * (MAX_NAME + 1)])
def test_a_job_name_that_is_not_a_non_empty_string_without_surrounding_space_is_refused_at_declaration(
    name: object,
) -> None:
    err = refused(lambda: job(name=name, idempotency_key=key)(handler))
    assert "name" in err.cause and (repr(name)[:20] in err.cause or ascii(name)[:20] in err.cause)


def test_a_job_name_at_the_bound_is_accepted() -> None:
    assert job(name="x" * MAX_NAME, idempotency_key=key)(handler).name == "x" * MAX_NAME


@pytest.mark.parametrize("queue", [None, 5, "", " q ", "q\t", "x" * (MAX_NAME + 1), "a\x00"])
def test_a_job_queue_that_is_not_a_non_empty_string_without_surrounding_space_is_refused_at_declaration(
    queue: object,
) -> None:
    err = refused(lambda: job(name="j", queue=queue, idempotency_key=key))
    assert "queue" in err.cause and err.fix == "@job(name='j', queue='default')"


def test_a_very_long_job_name_is_shown_cut_with_its_length() -> None:
    err = refused(lambda: job(name="x" * 5000, idempotency_key=key))
    assert "(5000 characters)" in err.cause and len(err.cause) < 300


@pytest.mark.parametrize("name", [" nightly", "x" * (MAX_NAME + 1), 7, "a@b"])
def test_a_task_name_breaking_the_job_name_rule_or_holding_an_at_sign_is_refused_at_declaration(name: object) -> None:
    refused(lambda: task(name=name, cron="0 2 * * *")(handler))


# --- @job without (...), handler and key signatures --------------------------------------------


def test_job_used_without_parentheses_is_refused_naming_the_def_and_the_call_to_write() -> None:
    err = refused(lambda: job(handler))  # type: ignore[arg-type]
    assert "without (...)" in err.cause and "'handler'" in err.cause
    assert err.fix.startswith("@job(name='handler', idempotency_key=lambda inp: ") and "0x" not in err.fix


@pytest.mark.parametrize("fn", [lambda: None, lambda ctx: None, lambda ctx, inp, extra: None, lambda *, ctx, inp: None])
def test_a_handler_that_cannot_take_ctx_and_inp_is_refused_at_declaration(fn: Any) -> None:
    err = refused(lambda: job(name="j", idempotency_key=key)(fn))
    assert "(ctx, inp)" in err.cause


@pytest.mark.parametrize(
    "fn",
    [
        handler,
        lambda *args: None,
        lambda ctx, inp, extra=None: None,
        functools.partial(lambda cfg, ctx, inp: None, {}),
        type("Callable", (), {"__call__": lambda self, ctx, inp: None})(),
    ],
)
def test_a_handler_that_can_take_ctx_and_inp_is_accepted(fn: Any) -> None:
    assert job(name="j", idempotency_key=key)(fn).fn is fn


def test_a_handler_whose_signature_cannot_be_read_is_accepted() -> None:
    # Python has no signature for dict.get; the engine cannot tell, so it does not refuse.
    assert job(name="j", idempotency_key=key)({}.get).name == "j"


@pytest.mark.parametrize("fn", [lambda: "k", lambda inp, tenant: "k"])
def test_an_idempotency_key_that_cannot_take_one_argument_is_refused_at_declaration(fn: Any) -> None:
    err = refused(lambda: job(name="j", idempotency_key=fn))
    assert "one argument" in err.cause


# --- ceilings --------------------------------------------------------------------------------


@pytest.mark.parametrize("poll", [1e300, 86400.5, 0.999, 1e-6])
def test_an_event_poll_outside_one_second_to_a_day_is_refused_saying_what_it_is(poll: float) -> None:
    err = refused(lambda: job(name="j", idempotency_key=key, event_poll=poll))
    assert "how often a job waiting for an event looks again" in err.cause and err.fix.endswith("event_poll=30)")


@pytest.mark.parametrize("poll", [1, 30, 86400])
def test_an_event_poll_from_one_second_to_a_day_is_accepted(poll: float) -> None:
    assert job(name="j", idempotency_key=key, event_poll=poll)(handler).event_poll == poll


@pytest.mark.parametrize("step_timeout", [60, 90])
def test_a_step_timeout_at_or_past_the_attempt_timeout_is_refused_at_declaration(step_timeout: float) -> None:
    err = refused(lambda: job(name="j", idempotency_key=key, timeout=60, step_timeout=step_timeout))
    assert f"step_timeout={step_timeout}" in err.cause and "timeout=60, step_timeout=30" in err.fix
    assert job(name="j", idempotency_key=key, step_timeout=step_timeout)(handler).timeout is None


def test_a_rate_limit_period_past_a_year_is_refused() -> None:
    err = refused(lambda: RateLimit(limit=1, per=1e300))
    assert "per=1e+300" in err.cause
    assert RateLimit(limit=1, per=LONGEST_DELAY).per == LONGEST_DELAY


# --- tasks -----------------------------------------------------------------------------------


@pytest.mark.parametrize("zone", ["localtime", "posixrules", "Factory", "right/UTC", "posix/Europe/Paris"])
def test_a_task_zone_that_is_a_host_file_not_an_iana_name_is_refused_at_declaration(zone: str) -> None:
    err = refused(lambda: task(name="t.zone", cron="0 2 * * *", timezone=zone)(handler))
    assert repr(zone) in err.cause


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "America/New_York", "Etc/UTC"])
def test_a_task_zone_that_is_an_iana_name_is_accepted(zone: str) -> None:
    assert task(name="t.zone_ok", cron="0 2 * * *", timezone=zone)(handler).cron.timezone == zone


@pytest.mark.parametrize("bound", [2**31, 2**40])
def test_a_max_catch_up_past_a_32_bit_integer_is_refused_at_declaration(bound: int) -> None:
    err = refused(lambda: task(name="t.catch", cron="0 2 * * *", catch_up="all", max_catch_up=bound))
    assert str(bound) in err.cause and "32-bit" in err.cause
    assert task(name="t.catch", cron="0 2 * * *", catch_up="all", max_catch_up=2**31 - 1)(handler).max_catch_up


# --- retry policy and the error tables --------------------------------------------------------


def test_a_retry_seed_without_jitter_is_refused_as_doing_nothing() -> None:
    err = refused(lambda: RetryPolicy(seed=7))
    assert "without jitter" in err.cause and err.fix == "RetryPolicy(jitter=0.2, seed=7)"


@pytest.mark.parametrize("seed", [[1], "7", 1.5, True])
def test_a_retry_seed_that_is_not_a_whole_number_is_refused(seed: object) -> None:
    err = refused(lambda: RetryPolicy(jitter=0.2, seed=seed))  # type: ignore[arg-type]
    assert repr(seed) in err.cause


@pytest.mark.parametrize("table", ["X_A", ["X_A"], {1: "terminal"}, {"": "terminal"}, {"X_A": 1}, {"X_A": "fatal"}])
def test_a_retry_table_that_is_not_codes_to_classifications_is_refused_and_nothing_is_registered(table: Any) -> None:
    before = dict(_RETRY_TABLE)
    refused(lambda: register_error_retry(table), "X_INVALID_ARGUMENT")
    assert _RETRY_TABLE == before


@pytest.mark.parametrize(
    "table", ["X_A", {5: "a"}, {"": "a"}, {"x_lower": "a"}, {"X_A": 5}, {"X_OK": "a", "X_B": None}]
)
def test_an_error_code_table_that_is_not_codes_to_titles_is_refused_and_nothing_is_registered(table: Any) -> None:
    before = dict(_CODES)
    refused(lambda: register_error_codes(table), "X_INVALID_ARGUMENT")
    assert _CODES == before


# --- Backfills -------------------------------------------------------------------------------


@pytest.mark.parametrize("queue", [None, "", 5, "a\x00", " backfills", "x" * (MAX_NAME + 1)])
def test_a_backfills_queue_breaking_the_job_queue_rule_is_refused_at_declaration(queue: object) -> None:
    err = refused(lambda: Backfills(queue=queue))  # type: ignore[arg-type]
    assert "queue" in err.cause


@pytest.mark.parametrize("version", [5, "", "  ", "v\x00"])
def test_a_backfills_version_that_is_not_a_non_empty_string_is_refused_at_declaration(version: object) -> None:
    err = refused(lambda: Backfills(version=version))  # type: ignore[arg-type]
    assert "version" in err.cause


def test_an_unknown_backfills_option_is_refused_with_the_nearest_name() -> None:
    err = refused(lambda: Backfills(vresion="1"))  # type: ignore[call-arg]
    assert "did you mean 'version'" in err.cause and err.fix == "Backfills(version=...)"


def test_an_empty_app_version_in_the_environment_is_no_version(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBS_APP_VERSION", "")
    assert Backfills().version is None
    monkeypatch.setenv("JOBS_APP_VERSION", "2026.03.1")
    assert Backfills().version == "2026.03.1"


async def test_a_task_enqueued_by_hand_needs_a_scheduled_for_instant_and_its_error_keeps_the_tasks_fix() -> None:
    from engine import connect

    nightly = task(name="t.by_hand", cron="0 2 * * *")(handler)
    eng = connect("memory://")
    for bad in ({}, {"scheduled_for": "garbage"}, {"scheduled_for": "2026-03-29T00:00:00"}):  # the last: no zone
        with pytest.raises(JobsError) as err:
            await eng.aenqueue(nightly, bad)
        assert (
            "names no scheduled_for instant" in err.value.cause
            and err.value.fix == "jobsctl schedule trigger t.by_hand"
        )
    res = await eng.aenqueue(nightly, {"scheduled_for": "2026-03-29T00:00:00Z"})
    assert (await eng.aget(res.id)).idempotency_key == "t.by_hand@2026-03-29T00:00:00Z"
