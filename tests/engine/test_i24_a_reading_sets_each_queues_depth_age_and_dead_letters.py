"""I24's queue gauges: a reading sets, per queue, its depth (ready + parked + due), the age of its
oldest waiting job and its dead letters, each to the value the reading holds, and the exposition
shows those three for every queue named."""

from __future__ import annotations

from engine.runtime.metrics import Metrics
from engine.types import QueueGauges


def test_i24_a_reading_sets_each_queues_depth_oldest_age_and_dead_letters() -> None:
    m = Metrics()
    m.set_gauges([QueueGauges("mail", 40, 12.5, 3), QueueGauges("bills", 2, 1.0, 7)])
    sample = m.registry.get_sample_value
    assert [sample(n, {"queue": "mail"}) for n in ("queue_depth", "queue_oldest_ready_seconds", "queue_dead_jobs")] == [
        40,
        12.5,
        3,
    ]
    assert [
        sample(n, {"queue": "bills"}) for n in ("queue_depth", "queue_oldest_ready_seconds", "queue_dead_jobs")
    ] == [
        2,
        1.0,
        7,
    ]
    m.set_gauges([QueueGauges("mail", 41, 13.0, 4), QueueGauges("bills", 2, 1.0, 7)])
    assert sample("queue_dead_jobs", {"queue": "mail"}) == 4 and sample("queue_depth", {"queue": "mail"}) == 41
