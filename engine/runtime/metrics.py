"""Prometheus metrics (I24): jobs_total{queue,outcome}, queue_depth (ready + parked),
queue_oldest_ready_seconds, queue_dead_jobs, lease_lost_total, job duration, reconnects; the
outbox's backlog, oldest unpublished age, publishes and failed publishes.

Each Worker owns a `Metrics` on its own registry (two workers in one process never collide);
`serve_metrics` exposes it, on loopback unless told otherwise.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server
from prometheus_client.core import HistogramMetricFamily, Metric

from engine.types import QueueGauges

_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0, 600.0)


class DurationHistogram:
    """job_duration_seconds{queue}, observed once per job on the worker's loop without a lock.

    prometheus_client's Histogram takes a lock for the sum and another for the bucket on every
    observation (~2 us a job, ~4% of a draining worker). Here an observation is a bisect and two
    additions on plain lists, and the exposition (another thread) reads a copy of them: a scrape
    may see a sum one observation ahead of its buckets, never a torn bucket.
    """

    name, doc = "job_duration_seconds", "Handler run time"

    def __init__(self, registry: CollectorRegistry, buckets: tuple[float, ...] = _BUCKETS) -> None:
        self.bounds = buckets
        self._queues: dict[str, list[float]] = {}  # per queue: a count per bucket, +Inf, then the sum
        registry.register(self)

    def observe(self, queue: str, seconds: float) -> None:
        row = self._queues.get(queue)
        if row is None:
            row = self._queues[queue] = [0.0] * (len(self.bounds) + 2)
        row[bisect_left(self.bounds, seconds)] += 1
        row[-1] += seconds

    def describe(self) -> list[Metric]:
        return [HistogramMetricFamily(self.name, self.doc, labels=["queue"])]

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.doc, labels=["queue"])
        for queue, row in list(self._queues.items()):
            snap, running, buckets = list(row), 0.0, []
            for bound, n in zip((*(repr(float(b)) for b in self.bounds), "+Inf"), snap[:-1]):
                running += n
                buckets.append((bound, running))
            family.add_metric([queue], buckets, sum_value=snap[-1])
        yield family


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.jobs_total = Counter("jobs_total", "Settled attempts by outcome", ["queue", "outcome"], registry=r)
        self.duration = DurationHistogram(r)
        self.lease_lost = Counter(
            "lease_lost_total", "Leases lost while this process still ran the job", ["queue"], registry=r
        )
        self.slot_lost = Counter(
            "jobs_slot_lost_total",
            "Fleet concurrency slots lost while this process still ran the job",
            ["queue"],
            registry=r,
        )
        self.orphaned = Counter(
            "jobs_orphaned_total",
            "Running jobs this process re-delivered because their worker was gone (its presence ended)",
            ["queue"],
            registry=r,
        )
        self.settle_failed = Counter(
            "jobs_settle_failed_total", "Acks or nacks that failed (never a job failure, I6)", ["queue"], registry=r
        )
        self.reconnects = Counter(
            "jobs_worker_reconnects_total", "Database calls retried after a connection error", ["what"], registry=r
        )
        self.depth = Gauge("queue_depth", "Ready + parked + due jobs (I8)", ["queue"], registry=r)
        self.oldest = Gauge("queue_oldest_ready_seconds", "Age of the oldest waiting job", ["queue"], registry=r)
        self.dead = Gauge("queue_dead_jobs", "Dead letters", ["queue"], registry=r)
        self.in_use = Gauge("jobs_worker_slots_in_use", "Claim slots holding a job", registry=r)
        # The outbox relay's (engine/services/relay.py): its backlog as the fleet sees it, and this
        # process's publishes.
        self.outbox_backlog = Gauge("outbox_backlog", "Staged rows not published yet (counted up to a cap)", registry=r)
        self.outbox_oldest = Gauge("outbox_oldest_unpublished_seconds", "Age of the oldest unpublished row", registry=r)
        self.outbox_published = Counter("outbox_published_total", "Outbox rows this process published", registry=r)
        self.outbox_failed = Counter("outbox_publish_failed_total", "Outbox publishes that failed", registry=r)
        # The scheduler (engine/services/scheduler.py, I21).
        self.schedule_enqueued = Counter(
            "jobs_schedule_occurrences_enqueued_total",
            "Cron occurrences enqueued by this process",
            ["task"],
            registry=r,
        )
        self.schedule_skipped = Counter(
            "jobs_schedule_occurrences_skipped_total", "Missed occurrences catch-up skipped", ["task"], registry=r
        )
        self.scheduler_tick_age = Gauge(
            "jobs_scheduler_leader_tick_age_seconds",
            "Seconds since the scheduler's leader last ticked, as this process saw it (+Inf: no leader ever)",
            registry=r,
        )
        # Label children cached: .labels() takes a lock and hashes every call, per job.
        self._outcomes: dict[tuple[str, str], Counter] = {}
        self._gauged: set[str] = set()  # queues a gauge reading has named

    def outcome(self, queue: str, outcome: str, n: int = 1) -> None:
        child = self._outcomes.get((queue, outcome))
        if child is None:
            child = self._outcomes[(queue, outcome)] = self.jobs_total.labels(queue, outcome)
        child.inc(n)

    def observe(self, queue: str, seconds: float) -> None:
        self.duration.observe(queue, seconds)

    def count(self, queue: str, outcome: str) -> float:
        """The current value of jobs_total{queue,outcome} (tests and the bench read it)."""
        value = self.registry.get_sample_value("jobs_total", {"queue": queue, "outcome": outcome})
        return value or 0.0

    def set_gauges(self, gauges: list[QueueGauges]) -> None:
        """A fresh reading: a queue it no longer names (nothing waiting, nothing dead) reads 0,
        not the last value it had while it held work."""
        named = {g.queue for g in gauges}
        for queue in self._gauged - named:
            self.depth.labels(queue).set(0)
            self.oldest.labels(queue).set(0)
            self.dead.labels(queue).set(0)
        for g in gauges:
            self.depth.labels(g.queue).set(g.depth)
            self.oldest.labels(g.queue).set(g.oldest_ready_seconds)
            self.dead.labels(g.queue).set(g.dead)
        self._gauged |= named


def serve_metrics(metrics: Metrics, port: int, host: str = "127.0.0.1") -> object:
    """Start the exposition on ``host:port`` (loopback by default); answers the server."""
    server, _thread = start_http_server(port, addr=host, registry=metrics.registry)
    return server
