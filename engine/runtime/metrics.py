"""Prometheus metrics (I24): jobs_total{queue,outcome}, queue_depth (ready + parked),
queue_oldest_ready_seconds, queue_dead_jobs, lease_lost_total, job duration, reconnects, other errors by loop; the
outbox's backlog, oldest unpublished age, publishes and failed publishes; the scheduler's
occurrences and its leader's tick age. A gauge of a service the process does not run (the
relay's, the scheduler's, the worker's slots) has no sample (ServiceGauge).

Each Worker owns a `Metrics` on its own registry (two workers in one process never collide);
`serve_metrics` exposes it, on loopback unless told otherwise.

The values live in plain objects here, and `Metrics` is a prometheus_client collector over them:
the registry asks it for its families at each scrape (prometheus_client's custom-collector
protocol), and the library does the naming, the exposition formats and the serving. A worker
process never imports prometheus_client until its metrics are exposed or read (the library's
package loads its HTTP exposition with it, ~25 ms of every process start), and a value changes
on the worker's loop without a lock. A scrape (another thread) reads copies: it may see one
family a few events ahead of another, never a torn value.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from engine.errors import X_INVALID_ARGUMENT, JobsError
from engine.types import QueueGauges

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import Metric

    from engine.runtime.health import Health

_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0, 600.0)


class CounterValue:
    """One counter's value for one set of label values."""

    __slots__ = ("value", "created")

    def __init__(self) -> None:
        self.value, self.created = 0.0, time.time()

    def inc(self, amount: float = 1) -> None:
        if amount < 0:
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        self.value += amount


class GaugeValue:
    """One gauge's value for one set of label values."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def set(self, value: float) -> None:
        self.value = float(value)

    def inc(self, amount: float = 1) -> None:
        self.value += amount

    def dec(self, amount: float = 1) -> None:
        self.value -= amount


V = TypeVar("V", CounterValue, GaugeValue)


class _Family(Generic[V]):
    """A metric's values by label values; a family without labels has its one value from the start
    (prometheus_client's Counter and Gauge expose theirs the same way)."""

    value_type: type[V]

    def __init__(self, name: str, doc: str, labelnames: tuple[str, ...] = ()) -> None:
        self.name, self.doc, self.labelnames = name, doc, labelnames
        self.values: dict[tuple[str, ...], V] = {}
        if not labelnames:
            self.values[()] = self.value_type()

    def labels(self, *values: str) -> V:
        key = tuple(str(v) for v in values)
        child = self.values.get(key)
        if child is None:
            if len(key) != len(self.labelnames):
                raise ValueError(f"{self.name} takes labels {self.labelnames}, was given {key}")
            child = self.values[key] = self.value_type()
        return child


class Counter(_Family[CounterValue]):
    value_type = CounterValue

    def inc(self, amount: float = 1) -> None:
        self.labels().inc(amount)

    def family(self) -> Metric:
        from prometheus_client import metrics as library
        from prometheus_client.core import CounterMetricFamily

        # Each series' creation time, unless the application turned those series off
        # (PROMETHEUS_DISABLE_CREATED_SERIES, disable_created_metrics()), as the library's own do.
        created = getattr(library, "_use_created", True)
        family = CounterMetricFamily(self.name, self.doc, labels=self.labelnames)
        for key, c in list(self.values.items()):
            family.add_metric(list(key), c.value, created=c.created if created else None)
        return family


class Gauge(_Family[GaugeValue]):
    value_type = GaugeValue

    def set(self, value: float) -> None:
        self.labels().set(value)

    def family(self) -> Metric:
        from prometheus_client.core import GaugeMetricFamily

        family = GaugeMetricFamily(self.name, self.doc, labels=self.labelnames)
        for key, g in list(self.values.items()):
            family.add_metric(list(key), g.value)
        return family


class ServiceGauge(Gauge):
    """A gauge of one service a process may not run (the worker's slots, the relay's backlog, the
    scheduler's leader): no sample until that service first sets it, so a process that does not
    run the service leaves it out of its exposition (its HELP and TYPE only) instead of exporting
    a value nobody measured, which an alert would read as healthy."""

    def __init__(self, name: str, doc: str) -> None:
        super().__init__(name, doc)
        self.values.clear()


class DurationHistogram:
    """job_duration_seconds{queue}, observed once per job on the worker's loop without a lock.

    prometheus_client's Histogram takes a lock for the sum and another for the bucket on every
    observation (~2 us a job, ~4% of a draining worker). Here an observation is a bisect and two
    additions on plain lists, and the exposition (another thread) reads a copy of them: a scrape
    may see a sum one observation ahead of its buckets, never a torn bucket.
    """

    name, doc = "job_duration_seconds", "Handler run time"

    def __init__(self, buckets: tuple[float, ...] = _BUCKETS) -> None:
        self.bounds = buckets
        self._queues: dict[str, list[float]] = {}  # per queue: a count per bucket, +Inf, then the sum

    def observe(self, queue: str, seconds: float) -> None:
        row = self._queues.get(queue)
        if row is None:
            row = self._queues[queue] = [0.0] * (len(self.bounds) + 2)
        row[bisect_left(self.bounds, seconds)] += 1
        row[-1] += seconds

    def family(self) -> Metric:
        from prometheus_client.core import HistogramMetricFamily

        family = HistogramMetricFamily(self.name, self.doc, labels=["queue"])
        for queue, row in list(self._queues.items()):
            snap, running, buckets = list(row), 0.0, []
            for bound, n in zip((*(repr(float(b)) for b in self.bounds), "+Inf"), snap[:-1]):
                running += n
                buckets.append((bound, running))
            family.add_metric([queue], buckets, sum_value=snap[-1])
        return family


class Metrics:
    """The worker's metrics, and the collector a registry reads them through. ``registry``: one to
    register with now (an application's own, to expose them with its other metrics); without it,
    a registry of their own is made when first asked for (`serve_metrics`, a test's read)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.jobs_total = Counter("jobs_total", "Settled attempts by outcome", ("queue", "outcome"))
        self.duration = DurationHistogram()
        self.lease_lost = Counter("lease_lost_total", "Leases lost while this process still ran the job", ("queue",))
        self.slot_lost = Counter(
            "jobs_slot_lost_total", "Fleet concurrency slots lost while this process still ran the job", ("queue",)
        )
        self.orphaned = Counter(
            "jobs_orphaned_total",
            "Running jobs this process re-delivered because their worker was gone (its presence ended)",
            ("queue",),
        )
        self.settle_failed = Counter(
            "jobs_settle_failed_total", "Acks or nacks that failed (never a job failure, I6)", ("queue",)
        )
        self.reconnects = Counter(
            "jobs_worker_reconnects_total", "Database calls retried after a connection error", ("what",)
        )
        self.errors = Counter(
            "jobs_worker_errors_total",
            "Calls of a loop that failed for another reason than a lost connection (retried)",
            ("what", "code"),
        )
        self.depth = Gauge("queue_depth", "Ready + parked + due jobs (I8)", ("queue",))
        self.oldest = Gauge("queue_oldest_ready_seconds", "Age of the oldest waiting job", ("queue",))
        self.dead = Gauge("queue_dead_jobs", "Dead letters", ("queue",))
        # Every process registers every family; the gauges of one service (ServiceGauge) are
        # exported by a process once it runs that service. The queue gauges above have a series
        # per queue only once a worker's reading names it.
        self.in_use = ServiceGauge("jobs_worker_slots_in_use", "Claim slots holding a job")
        # The outbox relay's (engine/services/relay.py): its backlog as the fleet sees it, and this
        # process's publishes.
        self.outbox_backlog = ServiceGauge("outbox_backlog", "Staged rows not published yet (counted up to a cap)")
        self.outbox_oldest = ServiceGauge("outbox_oldest_unpublished_seconds", "Age of the oldest unpublished row")
        self.outbox_published = Counter("outbox_published_total", "Outbox rows this process published")
        self.outbox_failed = Counter("outbox_publish_failed_total", "Outbox publishes that failed")
        # The scheduler (engine/services/scheduler.py, I21).
        self.schedule_enqueued = Counter(
            "jobs_schedule_occurrences_enqueued_total", "Cron occurrences enqueued by this process", ("task",)
        )
        self.schedule_skipped = Counter(
            "jobs_schedule_occurrences_skipped_total", "Missed occurrences catch-up skipped", ("task",)
        )
        self.scheduler_tick_age = ServiceGauge(
            "jobs_scheduler_leader_tick_age_seconds",
            "Seconds since the scheduler's leader last ticked, as this process saw it (+Inf: no leader ever)",
        )
        self._families: list[Counter | Gauge | DurationHistogram] = [
            v for v in vars(self).values() if isinstance(v, (Counter, Gauge, DurationHistogram))
        ]
        self._outcomes: dict[tuple[str, str], CounterValue] = {}  # jobs_total's values, by key, per batch
        self._gauged: set[str] = set()  # queues a gauge reading has named
        self._registry = registry
        if registry is not None:
            registry.register(self)

    @property
    def registry(self) -> CollectorRegistry:
        if self._registry is None:
            from prometheus_client import CollectorRegistry

            self._registry = CollectorRegistry()
            self._registry.register(self)
        return self._registry

    def describe(self) -> list[Metric]:
        """The families, read by the registry at registration: it refuses a name registered twice."""
        return [f.family() for f in self._families]

    def collect(self) -> Iterator[Metric]:
        for f in self._families:
            yield f.family()

    def outcome(self, queue: str, outcome: str, n: int = 1) -> None:
        child = self._outcomes.get((queue, outcome))
        if child is None:
            child = self._outcomes[(queue, outcome)] = self.jobs_total.labels(queue, outcome)
        child.inc(n)

    def observe(self, queue: str, seconds: float) -> None:
        self.duration.observe(queue, seconds)

    def count(self, queue: str, outcome: str) -> float:
        """The current value of jobs_total{queue,outcome} (tests and the bench read it)."""
        child = self.jobs_total.values.get((queue, outcome))
        return child.value if child is not None else 0.0

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


def serve_metrics(metrics: Metrics, port: int, host: str = "127.0.0.1", health: Health | None = None) -> object:
    """Start the exposition at ``/metrics`` on ``host:port`` (loopback by default), in a thread of
    its own, and with ``health`` the probes beside it: ``/livez`` (``/healthz`` too) and
    ``/readyz``, 200 or 503 with one line saying why (engine/runtime/health.py). Any other path is
    404 naming the ones served: a probe pointed at a path this process does not answer fails
    rather than reading the metrics as a pass. Answers the server (``shutdown()``). A port that
    cannot be bound is X_INVALID_ARGUMENT."""
    import threading
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    from prometheus_client import make_wsgi_app
    from prometheus_client.exposition import ThreadingWSGIServer

    exposition = make_wsgi_app(metrics.registry)
    probes = {"/livez": "live", "/healthz": "live", "/readyz": "ready"} if health is not None else {}
    served = ", ".join(["/metrics", *probes])

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            return exposition(environ, start_response)  # type: ignore[no-any-return]
        probe = probes.get(path)
        if probe is None:
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [f"{path[:200]} is not served here: {served}\n".encode()]
        ok, why = getattr(health, probe)()
        start_response("200 OK" if ok else "503 Service Unavailable", [("Content-Type", "text/plain; charset=utf-8")])
        return [f"{why}\n".encode()]

    class Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # a probe a second is no log line
            pass

    try:
        server = make_server(host, port, app, ThreadingWSGIServer, handler_class=Quiet)
    except OSError as exc:
        raise JobsError(
            X_INVALID_ARGUMENT,
            cause=f"the metrics port {host}:{port} cannot be served: {exc.strerror or exc}",
            fix=f"--metrics-port {port + 1} (a port no other process holds)",
        ) from None
    threading.Thread(target=server.serve_forever, name="jobs-metrics", daemon=True).start()
    return server
