"""The worker's metrics: the lock-free duration histogram exposes what prometheus's own would;
the queue gauges follow each reading."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    enable_created_metrics,
    generate_latest,
)

from engine.runtime.metrics import _BUCKETS, Metrics, serve_metrics
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


def _families(registry: CollectorRegistry, names: set[str]) -> dict[str, object]:
    """Each named family's type, help and samples, but its _created samples (a creation time)."""
    return {
        m.name: (
            m.type,
            m.documentation,
            sorted((x.name, sorted(x.labels.items()), x.value) for x in m.samples if not x.name.endswith("_created")),
        )
        for m in registry.collect()
        if m.name in names
    }


def test_i24_counters_and_gauges_expose_what_prometheus_clients_own_would() -> None:
    ours = Metrics()
    reference = CollectorRegistry()
    theirs_total = Counter("jobs_total", "Settled attempts by outcome", ["queue", "outcome"], registry=reference)
    theirs_lost = Counter(
        "lease_lost_total", "Leases lost while this process still ran the job", ["queue"], registry=reference
    )
    theirs_depth = Gauge("queue_depth", "Ready + parked + due jobs (I8)", ["queue"], registry=reference)
    theirs_in_use = Gauge("jobs_worker_slots_in_use", "Claim slots holding a job", registry=reference)
    theirs_published = Counter("outbox_published_total", "Outbox rows this process published", registry=reference)
    ours.outcome("mail", "completed", 3)
    ours.outcome("mail", "completed")
    ours.outcome("bills", "dead")
    theirs_total.labels("mail", "completed").inc(4)
    theirs_total.labels("bills", "dead").inc()
    ours.lease_lost.labels("mail").inc()
    theirs_lost.labels("mail").inc()
    ours.depth.labels("mail").set(7)
    theirs_depth.labels("mail").set(7)
    ours.in_use.set(12)
    theirs_in_use.set(12)
    ours.outbox_published.inc(5)
    theirs_published.inc(5)
    names = {"jobs", "lease_lost", "queue_depth", "jobs_worker_slots_in_use", "outbox_published"}
    assert _families(ours.registry, names) == _families(reference, names)
    assert len(_families(reference, names)) == len(names)
    assert ours.registry.get_sample_value("jobs_total", {"queue": "mail", "outcome": "completed"}) == 4
    # Each counter series carries its creation time, as prometheus_client's do.
    created = [
        line for line in generate_latest(ours.registry).decode().splitlines() if line.startswith("jobs_created{")
    ]
    assert len(created) == 2


def test_i24_counters_leave_out_their_created_series_when_the_application_turns_them_off() -> None:
    ours, reference = Metrics(), CollectorRegistry()
    Counter("jobs_total", "Settled attempts by outcome", ["queue", "outcome"], registry=reference).labels(
        "mail", "completed"
    ).inc()
    ours.outcome("mail", "completed")
    disable_created_metrics()
    try:
        text, theirs = generate_latest(ours.registry).decode(), generate_latest(reference).decode()
    finally:
        enable_created_metrics()
    assert "jobs_created" not in text and "jobs_created" not in theirs
    assert 'jobs_total{outcome="completed",queue="mail"} 1.0' in text
    assert "jobs_created{" in generate_latest(ours.registry).decode()  # back on


def test_i24_a_counter_refuses_a_negative_increment_and_a_wrong_label_count() -> None:
    m = Metrics()
    with pytest.raises(ValueError, match="non-negative"):
        m.lease_lost.labels("mail").inc(-1)
    with pytest.raises(ValueError, match="takes labels"):
        m.jobs_total.labels("mail")
    assert m.registry.get_sample_value("lease_lost_total", {"queue": "mail"}) == 0.0


def test_i24_metrics_registered_twice_on_one_registry_are_refused() -> None:
    # Two workers in one process each own a registry; an application that hands both its own
    # registry is told at once, as prometheus_client tells it of two metrics of one name.
    shared = CollectorRegistry()
    Metrics(shared)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        Metrics(shared)


def test_i24_serve_metrics_exposes_the_counts_over_http_on_loopback() -> None:
    m = Metrics()
    m.outcome("mail", "completed", 2)
    m.observe("mail", 0.002)
    server = serve_metrics(m, 0)
    try:
        host, port = server.server_address[:2]  # type: ignore[attr-defined]
        assert host == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
            text = answer.read().decode()
    finally:
        server.shutdown()  # type: ignore[attr-defined]
    assert 'jobs_total{outcome="completed",queue="mail"} 2.0' in text
    assert 'job_duration_seconds_bucket{le="0.005",queue="mail"} 1.0' in text
    assert "# TYPE jobs_worker_slots_in_use gauge" in text
