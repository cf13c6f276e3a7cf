"""A rate limit's key names its bucket by text: an answer that is not a string (None, a number, a
dict), or a string PostgreSQL cannot hold in its bucket's key, fails the attempt as terminal
X_INVALID_ARGUMENT on both drivers, as a key that raises does; never a bucket shared with the
answer's string spelling, and never a run that cannot settle on one driver only."""

from __future__ import annotations

from typing import Any

from engine.api import Engine
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.jobs import RateLimit, job
from engine.types import JobState
from tests.engine.test_worker import Q, next_of, running

# What the key answers, by the input's "k": each test names the answers it enqueues.
ANSWERS: dict[str, Any] = {
    "int": 42,
    "int-as-text": "42",
    "none": None,
    "none-again": None,
    "dict": {"region": "eu"},
    "bool": True,
    "nul": "eu\x00west",
    "lone-surrogate": "eu\udc80",
    # 3,000 characters of 3 bytes each that do not compress: past what a bucket's key holds.
    "too-long": "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(3000)),
    "longest": "k" * 1000,
}


@job(
    name="rk.answers",
    queue=Q,
    idempotency_key=lambda inp: str(inp["n"]),
    rate_limit=RateLimit(limit=1, per=3600.0, key=lambda inp, tenant: ANSWERS[inp["k"]]),
)
async def answers(ctx, inp):  # type: ignore[no-untyped-def]
    return inp["n"]


async def _outcomes(driver: Driver, clock: FakeClock, *kinds: str) -> dict[str, Any]:
    """Each kind's job enqueued and run in turn: {kind: (outcome, error_code, error, fix, attempt)}."""
    eng = Engine(driver, clock=clock, ids=IdFactory(clock, seed=11))
    got: dict[str, Any] = {}
    async with running(driver, clock, answers) as (_, seen):  # type: ignore[arg-type]
        for n, kind in enumerate(kinds):
            handle = await eng.aenqueue(answers, {"n": n, "k": kind})
            ex = await next_of(seen)
            assert ex.job_id == handle.id
            fix = None
            if ex.outcome == "dead":
                (attempt,) = await driver.job_attempts(job_id=handle.id)
                fix = attempt.fix
            row = await eng.aget(handle.id)
            got[kind] = (ex.outcome, ex.error_code, ex.error or "", fix, row.attempt, row.state)
    return got


async def test_a_rate_key_answering_no_string_fails_the_attempt_naming_the_job_and_the_type(
    driver: Driver, clock: FakeClock
) -> None:
    got = await _outcomes(driver, clock, "int", "none", "dict", "bool")
    for kind, type_name in (("int", "int"), ("none", "NoneType"), ("dict", "dict"), ("bool", "bool")):
        outcome, code, error, fix, attempt, state = got[kind]
        assert (outcome, code, attempt, state) == ("dead", "X_INVALID_ARGUMENT", 1, JobState.DEAD), kind
        assert "rate_limit key of job 'rk.answers' returned" in error and f"({type_name})" in error, error
        assert "[stop: terminal at attempt 1 of 3]" in error
        assert fix is not None and fix.startswith("RateLimit(limit=1, per=3600.0, key=lambda inp, tenant: ")
    assert "leaves key out" in got["none"][2] and got["none"][3].endswith("KEY or '-')")
    assert got["int"][3].endswith("str(KEY))")


async def test_an_int_key_never_takes_the_token_of_its_string_spelling(driver: Driver, clock: FakeClock) -> None:
    got = await _outcomes(driver, clock, "int", "int-as-text")
    assert got["int"][0] == "dead"
    assert got["int-as-text"][0] == "completed"  # bucket "42" still full: the int took nothing


async def test_none_is_not_a_shared_bucket_of_its_own(driver: Driver, clock: FakeClock) -> None:
    """Two runs keyed None do not share one 'None' bucket (the second parked behind the first):
    each fails, so the key's author learns at the first run that None names nothing."""
    got = await _outcomes(driver, clock, "none", "none-again")
    assert [got[k][:2] for k in ("none", "none-again")] == [("dead", "X_INVALID_ARGUMENT")] * 2


async def test_a_rate_key_postgres_cannot_store_fails_the_attempt_on_both_drivers(
    driver: Driver, clock: FakeClock
) -> None:
    """A NUL, a lone surrogate or a key past an index entry's limit: refused before any driver
    sees it, so the memory driver does not admit what PostgreSQL would fail on at every delivery."""
    got = await _outcomes(driver, clock, "nul", "lone-surrogate", "too-long", "longest")
    for kind, said in (("nul", "a NUL character"), ("lone-surrogate", "a lone surrogate"), ("too-long", "9,000 bytes")):
        outcome, code, error, fix, attempt, _ = got[kind]
        assert (outcome, code, attempt) == ("dead", "X_INVALID_ARGUMENT", 1), kind
        assert "rate_limit key of job 'rk.answers'" in error and said in error, error
        assert fix is not None and "hashlib.sha256(KEY.encode('utf-8', 'surrogatepass')).hexdigest()" in fix
    assert got["longest"][0] == "completed"  # 1,000 bytes: the most a key holds
