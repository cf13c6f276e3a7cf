"""bench.soak.backlog seeds the idempotency keys it names: the dedupe index's text order is the
claim order for `padded` keys at any depth, and not for `decimal` or `random` ones; a shape it does
not know is refused before a server starts."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import psycopg
import pytest

from bench.soak.backlog import KEYS, main
from bench.torture.sqlq import sql
from engine.testing import install


def _keys_in_claim_order(dsn: str, shape: str) -> list[str]:
    install(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql("soak_seed_ready"), {"n": 1200, "now": datetime.now(UTC), "keys": shape})  # type: ignore[arg-type]
        return [r[0] for r in conn.execute("select idempotency_key from jobs.job order by id")]


def test_the_backlog_seeds_keys_in_claim_order_only_when_padded(empty_db: Callable[[], str]) -> None:
    got = {shape: _keys_in_claim_order(empty_db(), shape) for shape in KEYS}
    assert got["padded"] == sorted(got["padded"]) and got["padded"][0] == "seed:0000001"
    assert got["decimal"] != sorted(got["decimal"]) and got["decimal"][:2] == ["seed:1", "seed:2"]
    assert got["random"] != sorted(got["random"]) and len(set(got["random"])) == 1200
    assert len({len(k) for k in got["random"]}) == 1  # an md5 each: one width, no order


def test_the_backlog_refuses_a_key_shape_it_does_not_know(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["--keys", "decimal,uuid"])
    assert exit.value.code == 2
    assert "each shape must be one of decimal, padded, random" in capsys.readouterr().err
