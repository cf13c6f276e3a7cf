"""JSON in and out: the orjson fast path answers exactly what the standard library's rules answer."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

import pytest

from engine.codec import check_json_text, dumps, loads
from engine.errors import X_INPUT_NOT_JSON, JobsError


def _standard(value: object) -> tuple[object, str]:
    text = json.dumps(value, allow_nan=False, separators=(",", ":"), ensure_ascii=False)
    return json.loads(text), text


class Colour(StrEnum):
    RED = "red"


ACCEPTED = [
    {"user_id": 7, "name": "ann", "ratio": 0.1, "ok": True, "none": None},
    {"nested": {"list": [1, 2.5, "x", None, {"deep": [True]}]}},
    [1, 2, 3],
    "just text",
    42,
    1e16,
    -0.0,
    None,
    {"big": 2**70, "neg": -(2**70)},  # past 64 bits: exact, through the standard library
    {"tuple": (1, 2)},
    (1, [2, 3]),  # tuples become lists
    {3: "int key", 2.5: "float key", True: "bool key", None: "null key"},  # keys become strings
    {"colour": Colour.RED},  # a str subclass is written as its value
    {"text": 'héllo "quoted" \\ back \n line \x01 \u2028 \\u0000'},  # NUL itself: refused (below)
]


@pytest.mark.parametrize("value", ACCEPTED, ids=range(len(ACCEPTED)))
def test_an_accepted_value_normalises_as_the_standard_library_would(value: object) -> None:
    normalised, text = check_json_text(value)
    want_value, _ = _standard(value)
    assert normalised == want_value and type(normalised) is type(want_value)
    assert json.loads(text) == want_value and loads(text) == want_value and loads(text.encode()) == want_value
    assert json.loads(dumps(value)) == want_value


REFUSED = [
    {"nan": float("nan")},
    {"inf": float("inf")},
    [float("-inf")],
    {"when": datetime(2026, 1, 1, tzinfo=UTC)},  # orjson would write these three: we never do
    {"id": uuid.UUID(int=1)},
    {"row": (dataclass(frozen=True)(type("Row", (), {"__annotations__": {"a": int}})))(1)},
    {"set": {1, 2}},
    {"bytes": b"x"},
    {(1, 2): "tuple key"},
]


@pytest.mark.parametrize("value", REFUSED, ids=range(len(REFUSED)))
def test_a_value_the_standard_library_refuses_is_refused_with_a_clear_error(value: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        _standard(value)
    with pytest.raises(JobsError) as err:
        check_json_text(value, job="send_email")
    assert err.value.code == X_INPUT_NOT_JSON and "send_email" in err.value.cause and err.value.fix
    with pytest.raises(JobsError):
        dumps(value)


def test_a_circular_or_too_deep_value_is_refused_not_crashed() -> None:
    loop: dict[str, object] = {}
    loop["self"] = loop
    deep: list[object] = []
    for _ in range(5000):
        deep = [deep]
    for value in (loop, deep):
        with pytest.raises(JobsError) as err:
            check_json_text(value)
        assert err.value.code == X_INPUT_NOT_JSON


def test_loads_reads_integers_past_64_bits_exactly() -> None:
    # orjson reads them as floats, silently; the database's numeric keeps every digit.
    assert loads(b'{"n": 123456789012345678901234567890}') == {"n": 123456789012345678901234567890}
    assert loads('{"n": -9223372036854775809}') == {"n": -9223372036854775809}
    assert loads(memoryview(b"[18446744073709551615, 1.5]")) == [18446744073709551615, 1.5]
    assert loads(None) is None


@pytest.mark.parametrize("value", [{"s": "a\x00b"}, {"k\x00": 1}, ["\x00"], {"s": "\\\x00"}, {"deep": [{"x": "\x00"}]}])
def test_a_nul_character_is_refused_with_a_clear_error_where_postgres_would_refuse_the_row(value: object) -> None:
    # Valid JSON (written \u0000) that jsonb cannot store: refused before anything is written,
    # on every driver, rather than failing the insert (or a whole ack batch) on the server.
    with pytest.raises(JobsError) as err:
        check_json_text(value, job="send_email")
    assert err.value.code == X_INPUT_NOT_JSON and "NUL" in err.value.cause and "replace" in err.value.fix
    with pytest.raises(JobsError):
        dumps(value, what="result")


def test_the_text_backslash_u0000_is_not_a_nul_character() -> None:
    normalised, text = check_json_text({"s": "\\u0000", "t": "\\\\u0000"})
    assert normalised == {"s": "\\u0000", "t": "\\\\u0000"} and json.loads(text) == normalised


@pytest.mark.parametrize(
    ("value", "key"),
    [({1: "a", "1": "b"}, "1"), ({True: "a", "true": "b"}, "true"), ({"x": [{None: 1, "null": 2}]}, "null")],
)
def test_two_keys_that_become_one_json_key_are_refused_one_value_would_be_lost(value: object, key: str) -> None:
    with pytest.raises(JobsError) as err:
        check_json_text(value, job="send_email")
    assert err.value.code == X_INPUT_NOT_JSON and f"both {key!r} as JSON text" in err.value.cause
    assert check_json_text({1: "a", 2: "b"}, job="send_email")[0] == {"1": "a", "2": "b"}  # distinct: kept
