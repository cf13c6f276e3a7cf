"""The app module the worker tests run `jobsctl worker` on (and import in-process): no tests here.

`JOBS_TEST_BLOCK=1` in a worker process's environment makes `w.pg_block` hang after saying so
on stdout, so a test can kill that process mid-job; anywhere else it completes at once.
`JOBS_TEST_FAST=1` makes `w.pg_work` skip its simulated work.
"""

from __future__ import annotations

import asyncio
import os

from engine.jobs import job

QUEUE = "pg-workers"


@job(name="w.pg_block", queue=QUEUE, idempotency_key=lambda inp: str(inp["n"]))
async def pg_block(ctx, inp):  # type: ignore[no-untyped-def]
    if os.environ.get("JOBS_TEST_BLOCK") == "1":
        print(f"STARTED {ctx.id}", flush=True)
        await asyncio.Event().wait()
    return {"n": inp["n"], "pid": os.getpid()}


@job(name="w.pg_work", queue=QUEUE, idempotency_key=lambda inp: str(inp["n"]))
async def pg_work(ctx, inp):  # type: ignore[no-untyped-def]
    print(f"STARTED {ctx.id}", flush=True)
    if os.environ.get("JOBS_TEST_FAST") != "1":
        await asyncio.sleep(float(inp.get("seconds", 0.05)))  # simulated work, not a wait for a condition
    return {"n": inp["n"], "pid": os.getpid()}


not_a_job = "a helper the registry skips"
