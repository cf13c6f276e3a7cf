"""The retry policy and the classification of errors (I4, I5)."""

from __future__ import annotations

import pytest

from engine.errors import JobsError
from engine.retry import RetryPolicy, decide_retry, failure_text, register_error_retry, retry_schedule

register_error_retry(
    {"X_TEST_AUTH_FAILED": "terminal", "X_TEST_RATE_LIMITED": "retry-after", "X_TEST_BUSY": "retryable"}
)


def err(code: str, **kw) -> JobsError:  # type: ignore[no-untyped-def]
    return JobsError(code, cause="test", fix="none", **kw)


def test_retry_schedule_exponential_linear_fixed() -> None:
    assert retry_schedule(RetryPolicy(attempts=5, backoff="exponential", delay=1.0)) == [1, 2, 4, 8]
    assert retry_schedule(RetryPolicy(attempts=4, backoff="linear", delay=2.0)) == [2, 4, 6]
    assert retry_schedule(RetryPolicy(attempts=3, backoff="fixed", delay=5.0)) == [5, 5]
    assert retry_schedule(RetryPolicy(attempts=6, backoff="exponential", delay=1.0, max_delay=5.0)) == [1, 2, 4, 5, 5]
    assert retry_schedule(RetryPolicy(attempts=1)) == []


def test_jitter_is_bounded_and_reproducible_with_a_seed() -> None:
    p = RetryPolicy(attempts=6, delay=10.0, max_delay=1000.0, jitter=0.2, seed=42)
    a, b = retry_schedule(p), retry_schedule(p)
    assert a == b
    base = [10, 20, 40, 80, 160]
    assert all(0.8 * x <= y <= 1.2 * x for x, y in zip(base, a))
    assert a != base


def test_retry_schedule_with_a_seed_is_the_delays_the_worker_waits() -> None:
    """The schedule a seeded policy shows is the one its retries keep: the worker draws each
    delay from the seed and the attempt (decide_retry), never from a generator it carries over."""
    p = RetryPolicy(attempts=6, delay=10.0, max_delay=1000.0, jitter=0.2, seed=7)
    assert retry_schedule(p) == [decide_retry(p, n, ValueError("boom")).delay for n in range(1, 6)]


@pytest.mark.parametrize(
    "bad",
    [
        {"attempts": 0},
        {"backoff": "cubic"},
        {"delay": -1},
        {"delay": 10, "max_delay": 5},
        {"jitter": 1.5},
        {"attempts": True},
        {"attempts": 1_000_001},
        {"delay": "5"},
        {"jitter": "0.1"},
        {"delay": float("nan")},
        {"max_delay": float("inf")},
        {"max_delay": 400 * 86400},
        {"base": 0.5},
        {"max_attempts": 4},
    ],
)
def test_a_bad_policy_is_refused_with_a_fix(bad: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(JobsError) as e:
        RetryPolicy(**bad)
    assert e.value.code == "X_INVALID_DEFINITION" and e.value.fix.startswith("RetryPolicy(")


def test_an_unknown_policy_option_names_the_nearest_one() -> None:
    with pytest.raises(JobsError) as e:
        RetryPolicy(max_attempts=4)  # type: ignore[call-arg]
    assert "did you mean 'attempts'" in e.value.cause and e.value.fix == "RetryPolicy(attempts=...)"
    with pytest.raises(JobsError) as e:
        RetryPolicy(base=0.5)  # type: ignore[call-arg]
    assert "its options: attempts, backoff, delay, max_delay, jitter, seed" in e.value.cause


def test_an_exponential_backoff_past_a_thousand_attempts_is_its_max_delay() -> None:
    """2 ** 1100 has no float: the delay after attempt 1,100 of a long-retrying job raised
    OverflowError in the worker's failure path, and the attempt was never settled."""
    p = RetryPolicy(attempts=100_000, delay=2.0, max_delay=60.0, jitter=0.1, seed=1)
    assert [p.base_delay(n) for n in (1, 5, 6, 1100, 99_999)] == [2.0, 32.0, 60.0, 60.0, 60.0]
    assert 0 < p.delay_after(5000) <= 60.0
    assert decide_retry(p, 5000, ValueError("boom")).delay <= 60.0


def test_i4_terminal_is_dead_on_this_attempt() -> None:
    d = decide_retry(RetryPolicy(attempts=5), 1, err("X_TEST_AUTH_FAILED"))
    assert (d.outcome, d.stop_reason) == ("dead", "terminal")


def test_i4_retry_after_uses_the_named_delay_clamped_and_still_counts() -> None:
    p = RetryPolicy(attempts=3, delay=1.0, max_delay=60.0)
    assert decide_retry(p, 1, err("X_TEST_RATE_LIMITED", retry_after=12)).delay == 12
    assert decide_retry(p, 1, err("X_TEST_RATE_LIMITED", retry_after=3600)).delay == 60
    # It burns an attempt: at the ceiling it is dead like any other failure.
    d = decide_retry(p, 3, err("X_TEST_RATE_LIMITED", retry_after=5))
    assert (d.outcome, d.stop_reason) == ("dead", "attempts-exhausted")


def test_i4_retryable_unclassified_and_foreign_errors_follow_the_backoff() -> None:
    p = RetryPolicy(attempts=4, backoff="exponential", delay=2.0)
    for exc in (err("X_TEST_BUSY"), err("X_NOBODY_CLASSIFIED_THIS"), ValueError("boom")):
        assert [decide_retry(p, n, exc).delay for n in (1, 2, 3)] == [2, 4, 8]
        assert decide_retry(p, 4, exc).stop_reason == "attempts-exhausted"


def test_i4_an_unregistered_code_is_never_terminal_even_if_the_instance_says_so() -> None:
    e = err("X_UNREGISTERED_BUT_SAYS_TERMINAL")
    e.retry = "terminal"  # type: ignore[attr-defined]
    assert decide_retry(RetryPolicy(attempts=3), 1, e).outcome == "retry"


def test_i4_the_ceiling_outranks_everything_but_terminal() -> None:
    p = RetryPolicy(attempts=2)
    assert decide_retry(p, 2, err("X_TEST_BUSY")).stop_reason == "attempts-exhausted"
    assert decide_retry(p, 2, err("X_TEST_AUTH_FAILED")).stop_reason == "terminal"


def test_i5_a_dead_letter_explains_itself_in_its_last_error() -> None:
    p = RetryPolicy(attempts=5)
    e = err("X_TEST_AUTH_FAILED")
    assert failure_text(e, decide_retry(p, 1, e), 1, 5) == "X_TEST_AUTH_FAILED: test [stop: terminal at attempt 1 of 5]"
    v = ValueError("bad row")
    assert (
        failure_text(v, decide_retry(p, 5, v), 5, 5)
        == "ValueError: bad row [stop: attempts-exhausted at attempt 5 of 5]"
    )
    assert failure_text(v, decide_retry(p, 2, v), 2, 5) == "ValueError: bad row"


def test_register_error_retry_refuses_an_unknown_classification() -> None:
    with pytest.raises(JobsError) as e:
        register_error_retry({"X_FOO": "sometimes"})
    assert e.value.code == "X_INVALID_ARGUMENT" and "retryable" in e.value.fix
