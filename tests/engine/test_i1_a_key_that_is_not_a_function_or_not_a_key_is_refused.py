"""I1 beyond a missing key function: the idempotency key is never defaulted, so a declaration
whose idempotency_key is not a function (a fixed string, a number) is refused at declaration,
and a key function that answers an empty string, None or a non-string for an input is refused at
enqueue, before anything is written: an empty or constant key would dedupe every input onto one job."""

from __future__ import annotations

from typing import Any

import pytest

from engine import JobsError, job
from engine.api import Engine
from engine.drivers.memory import MemoryDriver


async def handler(ctx: Any, inp: Any) -> Any:
    return inp


@pytest.mark.parametrize("key", ["user:7", 7, b"user"])
def test_i1_an_idempotency_key_that_is_not_a_function_is_refused_at_declaration(key: object) -> None:
    with pytest.raises(JobsError) as e:
        job(name="send_email", idempotency_key=key)(handler)  # type: ignore[arg-type]
    assert e.value.code == "X_IDEMPOTENCY_REQUIRED"
    assert "send_email" in e.value.cause and "idempotency_key=lambda inp:" in e.value.fix


@pytest.mark.parametrize("answer", ["", None, 7])
def test_i1_a_key_function_answering_no_key_is_refused_at_enqueue_and_writes_nothing(answer: object) -> None:
    blank = job(name="blank_key", idempotency_key=lambda inp: answer)(handler)  # type: ignore[arg-type,return-value]
    mem = MemoryDriver()
    eng = Engine(mem)
    with pytest.raises(JobsError) as e:
        eng.enqueue(blank, {"user_id": 7})
    assert e.value.code == "X_INVALID_DEFINITION" and "blank_key" in e.value.cause and repr(answer) in e.value.cause
    assert mem.state.jobs == {}
    eng.close()
