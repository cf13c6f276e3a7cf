"""A drain request keeps who asked, when and their note on the worker's row: asked again (a no-op),
the answer is the first request's, its note included, on every driver."""

from __future__ import annotations

from engine.actions import Operator
from engine.clock import FakeClock
from engine.drivers.base import Driver
from engine.types import WorkerRegistration


async def test_a_second_drain_request_answers_the_first_requests_actor_time_and_note(
    driver: Driver, clock: FakeClock
) -> None:
    await driver.worker_register(
        worker=WorkerRegistration(id="host:1:abc", host="h", pid=1, queues=("q",), concurrency=2), now=clock.now()
    )
    first = await Operator(driver, clock=clock, actor="ann").drain_worker("host:1:abc", note="INC-3 bad host")
    asked_at = clock.now()
    clock.advance(5)
    again = await Operator(driver, clock=clock, actor="bob").drain_worker("host:1:abc", note="me too")
    assert (first.note, first.changed) == ("INC-3 bad host", True)
    assert (again.requested_by, again.requested_at, again.note, again.changed) == (
        "ann",
        asked_at,
        "INC-3 bad host",
        False,
    )
