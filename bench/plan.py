"""What one invocation measures: sizes and repetitions for the full run and for `--quick`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    runs: int  # each figure is the median of this many runs (min and max kept)
    enqueue_single: int  # jobs enqueued one per call
    enqueue_batched: int  # jobs enqueued in batches of 100 and of 1,000
    drain: int  # pre-enqueued no-op jobs drained
    lifecycle_txns: int  # pgbench transactions per client for the limit
    latency_seconds: float  # steady-rate window per rate
    rates: tuple[int, ...]
    steps_jobs: int  # 5-step jobs drained
    console_jobs: int  # rows for the console's projection timings
    # `--quick`: the smaller sizes above, and each suite's quick form (one enqueue run, one drain
    # setting, the projections' reduced seeds). A field, not QUICK's identity: --runs and
    # --drain-jobs replace the plan, and the copy is as quick as the plan it came from.
    quick: bool = False


FULL = Plan(
    runs=3,
    enqueue_single=2000,
    enqueue_batched=20_000,
    drain=20_000,
    lifecycle_txns=400,
    latency_seconds=5.0,
    rates=(100, 1000),
    steps_jobs=2000,
    console_jobs=1_000_000,
)
QUICK = Plan(
    runs=1,
    enqueue_single=200,
    enqueue_batched=2000,
    drain=1000,
    lifecycle_txns=20,
    latency_seconds=0.3,
    rates=(100, 1000),
    steps_jobs=50,
    console_jobs=10_000,
    quick=True,
)
