"""The worker's metrics: the lock-free duration histogram exposes what prometheus's own would;
the queue gauges follow each reading."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram, generate_latest

from engine.runtime.metrics import _BUCKETS, Metrics
from engine.types import QueueGauges


def _lines(registry: CollectorRegistry) -> list[str]:
    text = generate_latest(registry).decode()
    return [line for line in text.splitlines() if line.startswith("job_duration_seconds") and "_created" not in line]


def test_i24_the_duration_histogram_exposes_what_a_prometheus_histogram_would() -> None:
    ours = Metrics()
    reference = CollectorRegistry()
    theirs = Histogram("job_duration_seconds", "Handler run time", ["queue"], buckets=_BUCKETS, registry=reference)
    for queue, seconds in (("mail", 0.0005), ("mail", 0.001), ("mail", 0.002), ("bills", 0.3), ("mail", 900.0)):
        ours.observe(queue, seconds)
        theirs.labels(queue).observe(seconds)
    assert _lines(ours.registry) == _lines(reference)
    assert 'job_duration_seconds_bucket{le="0.001",queue="mail"} 2.0' in _lines(ours.registry)


def test_i24_a_queue_that_empties_reads_zero_not_its_last_depth() -> None:
    # A count names only queues holding waiting or dead rows: a queue that drained dropped out of
    # the reading, and its gauges kept the depth it had while it held work.
    m = Metrics()
    m.set_gauges([QueueGauges("mail", 40, 12.5, 3), QueueGauges("bills", 2, 1.0, 0)])
    m.set_gauges([QueueGauges("bills", 1, 0.5, 0)])
    sample = m.registry.get_sample_value
    assert sample("queue_depth", {"queue": "mail"}) == 0
    assert sample("queue_oldest_ready_seconds", {"queue": "mail"}) == 0
    assert sample("queue_dead_jobs", {"queue": "mail"}) == 0
    assert sample("queue_depth", {"queue": "bills"}) == 1
