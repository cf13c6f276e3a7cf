"""The jobs our worker runs in the bench (`jobsctl worker bench.workload`): no-ops, and 5 steps.

A job started with BENCH_UDP set reports (enqueued_at, started_at) for the latency figures.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

from bench.child import Reporter
from engine.jobs import job

QUEUE = "bench"
_report = Reporter(os.environ.get("BENCH_UDP"))


@job(name="bench.noop", queue=QUEUE, idempotency_key=lambda inp: str(inp["i"]))
async def noop(ctx: Any, inp: dict[str, Any]) -> None:
    _report.started(inp)


def _step_value(n: int) -> int:
    return n


async def _step_value_async(n: int) -> int:
    return n


@job(name="bench.steps5", queue=QUEUE, idempotency_key=lambda inp: str(inp["i"]))
async def steps5(ctx: Any, inp: dict[str, Any]) -> int:
    total = 0
    for n in range(5):  # five durable steps: each result is written before the next starts
        total += await ctx.step.run(f"s{n}", lambda n=n: _step_value(n))  # sync: each runs in a thread
    return total


@job(name="bench.steps5async", queue=QUEUE, idempotency_key=lambda inp: str(inp["i"]))
async def steps5async(ctx: Any, inp: dict[str, Any]) -> int:
    total = 0
    for n in range(5):  # the same five steps with async bodies: no thread hand-off, the writes alone
        total += await ctx.step.run(f"s{n}", partial(_step_value_async, n))
    return total
