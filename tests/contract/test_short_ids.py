"""job_find, the driver query behind short ids, means the same on every driver: a fragment's
head match (the id range, on the primary key) wins; the tail (what the console shows) is asked
only when no id begins with it; a tenant given narrows the candidates (I25); by id, bounded."""

from __future__ import annotations

from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.ids import IdFactory
from engine.introspect.base import id_fragment
from engine.testing import make_job
from engine.types import JobState


def hexid(job_id: str) -> str:
    return job_id.replace("-", "")


async def test_job_find_matches_a_head_else_a_tail_per_tenant_bounded(
    driver: Driver, ids: IdFactory, clock: FakeClock
) -> None:
    a = await make_job(driver, ids, clock.now(), tenant="acme")
    b = await make_job(driver, ids, clock.now(), state=JobState.DEAD)
    c = await make_job(driver, ids, clock.now(), tenant="globex")
    clock.advance(3600)
    d = await make_job(driver, ids, clock.now())

    async def find(fragment: str, tenant: str | None = None, limit: int = 11) -> list[str]:
        got = await driver.job_find(fragment=fragment, tenant=tenant, limit=limit, budget_ms=2000)
        return [j.id for j in got]

    ms = hexid(a.id)[:12]  # the millisecond a, b and c were minted in; d is an hour later
    assert await find(ms) == [a.id, b.id, c.id]
    assert await find(ms, limit=2) == [a.id, b.id]
    assert await find(ms, tenant="acme") == [a.id]
    assert await find(ms, tenant="initech") == []
    assert await find(hexid(d.id)[:16]) == [d.id]
    for n in (6, 7, 12, 13, 20):  # whole bytes, and an odd leading digit: half a byte
        assert await find(hexid(b.id)[-n:]) == [b.id]
    assert await find(hexid(c.id)[-8:], tenant="acme") == []  # another tenant's tail is no candidate
    (summary,) = await driver.job_find(fragment=hexid(b.id)[-12:], tenant=None, limit=2, budget_ms=None)
    assert (summary.name, summary.state, summary.error_code) == (b.name, JobState.DEAD, "X_BOOM")
    assert await find("abcdef987654") == []


def test_a_fragment_is_hex_digits_of_an_id_dashes_and_case_ignored() -> None:
    assert id_fragment("019B796D-D600") == "019b796dd600"
    assert id_fragment(" 019b796d-d600-7052-89a7-834df2a74de4 ") == "019b796d-d600-7052-89a7-834df2a74de4"
