"""The torture run's application: the module its `jobsctl worker` processes serve.

Every handler, and every step body, appends one row to the application's ledger
(torture.execution, sql/torture/app.sql) per execution: job id, run, attempt, step, pid and a
token of its own. A stored result names the token of the execution that produced it, so the
checks can tell the execution whose result the engine kept from the ones a fault made it redo.

The ledger is written through a connection pool of this process, as the application's login
($TORTURE_APP_DSN, else $JOBS_DSN). A write that fails (the server restarting, a connection
killed) fails the handler like any of an application's errors: the engine retries it.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any

from engine import Enqueue, JobError, RetryPolicy, register_error_retry
from engine.jobs import job
from engine.tasks import task

QUEUE = "torture"
EVENT = "torture.go"
TERMINAL, LATER, BUSY = "X_TORTURE_TERMINAL", "X_TORTURE_LATER", "X_TORTURE_BUSY"
FANOUT = 3  # the children of a fan-in
HOLD = 60.0  # seconds a doomed fan-in's child runs: far past the cancel that ends it
register_error_retry({TERMINAL: "terminal", LATER: "retry-after", BUSY: "retryable"})

# Enough attempts that the faults' lost attempts never exhaust a job that should complete.
SURVIVES = RetryPolicy(attempts=40, backoff="fixed", delay=0.2)
FAILS = RetryPolicy(attempts=3, backoff="fixed", delay=0.2)


def key(inp: dict[str, Any]) -> str:
    return str(inp["k"])


class Ledger:
    """This process's pool for the ledger, opened on first use (on the worker's loop)."""

    pool: Any = None

    @classmethod
    async def record(cls, ctx: Any, step: str = "") -> str:
        from psycopg_pool import AsyncConnectionPool

        from bench.torture.sqlq import sql

        if cls.pool is None:
            dsn = os.environ.get("TORTURE_APP_DSN") or os.environ["JOBS_DSN"]
            kwargs = {"application_name": "torture-ledger"}  # not an engine connection: the backend kills spare it
            cls.pool = AsyncConnectionPool(dsn, min_size=1, max_size=4, open=False, timeout=5.0, kwargs=kwargs)
            await cls.pool.open(wait=False)
        token = str(uuid.uuid4())
        row = ctx.job
        params = {
            "job_id": row.id,
            "key": key(row.input) if isinstance(row.input, dict) and "k" in row.input else row.idempotency_key,
            "kind": row.name.removeprefix("torture."),
            "run": row.run,
            "attempt": row.attempt,
            "step": step,
            "pid": os.getpid(),
            "token": token,
        }
        async with cls.pool.connection() as conn:
            await conn.execute(sql("torture_record"), params)
        return token


async def _step(ctx: Any, name: str) -> dict[str, Any]:
    return {"token": await Ledger.record(ctx, name)}


@job(name="torture.plain", queue=QUEUE, idempotency_key=key, retry=SURVIVES)
async def plain(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    return {"run": ctx.job.run, "token": await Ledger.record(ctx)}


@job(name="torture.staged", queue=QUEUE, idempotency_key=key, retry=SURVIVES)
async def staged(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    return {"run": ctx.job.run, "token": await Ledger.record(ctx)}


@job(name="torture.steps", queue=QUEUE, idempotency_key=key, retry=SURVIVES)
async def steps(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    token = await Ledger.record(ctx)
    done = [await ctx.step.run(name, lambda name=name: _step(ctx, name)) for name in ("a", "b", "c")]
    return {"run": ctx.job.run, "token": token, "steps": done}


@job(name="torture.sleep", queue=QUEUE, idempotency_key=key, retry=SURVIVES)
async def sleeper(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    token = await Ledger.record(ctx)
    await ctx.step.sleep("nap", float(inp.get("nap", 1.0)))
    return {"run": ctx.job.run, "token": token}


@job(name="torture.slow", queue=QUEUE, idempotency_key=key, retry=SURVIVES)
async def slow(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    """In flight for a while: what a kill, a stall or a restart finds running."""
    token = await Ledger.record(ctx)
    await asyncio.sleep(float(inp.get("secs", 1.0)))
    return {"run": ctx.job.run, "token": token}


@job(name="torture.wait", queue=QUEUE, idempotency_key=key, retry=SURVIVES)
async def waiter(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    token = await Ledger.record(ctx)
    got = await ctx.step.wait_for_event("go", event=EVENT, match={"k": inp["k"]}, timeout=3600)
    return {"run": ctx.job.run, "token": token, "got": got is not None}


def child_keys(parent: str, kind: str = "fanchild") -> list[str]:
    """The keys of a fan-in's children: ``<kind>-<the parent's seed.n>-<i>`` (checks.kind_of)."""
    return [f"{kind}-{parent.split('-', 1)[1].replace('-', '.')}-{i}" for i in range(FANOUT)]


@job(name="torture.fanin", queue=QUEUE, idempotency_key=key, retry=SURVIVES, event_poll=1.0)
async def fanin(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    """Enqueues three plain jobs in a step (ctx.step.enqueue: the jobs and the step's write are one
    commit, so no fault enqueues a child twice) and waits for them (ctx.step.wait_for_jobs): every
    look after the wait began is a run of its own."""
    token = await Ledger.record(ctx)
    ids = await ctx.step.enqueue("fan-out", [Enqueue(plain, {"k": k}) for k in child_keys(inp["k"])])
    done = await ctx.step.wait_for_jobs("fan-in", ids)
    return {"run": ctx.job.run, "token": token, "children": [d["state"] for d in done]}


@job(name="torture.doomed", queue=QUEUE, idempotency_key=key, retry=SURVIVES, event_poll=1.0)
async def doomed(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    """A fan-in the producer cancels with its children (``ops.cancel(id, children=True)``) a moment
    after enqueueing it: before it runs, while it fans out, or while its children (long ``slow``
    jobs) run. Nothing below it may run on, and none may be enqueued after the cancel."""
    token = await Ledger.record(ctx)
    kids = [Enqueue(slow, {"k": k, "secs": HOLD}) for k in child_keys(inp["k"], "doomchild")]
    done = await ctx.step.wait_for_jobs("fan-in", await ctx.step.enqueue("fan-out", kids))
    return {"run": ctx.job.run, "token": token, "children": [d["state"] for d in done]}


@job(name="torture.flaky", queue=QUEUE, idempotency_key=key, retry=SURVIVES)
async def flaky(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    """Dies on its first run (a terminal error), completes on any later one: a retry makes it."""
    token = await Ledger.record(ctx)
    if ctx.job.run == 1 and inp.get("flaky"):
        raise JobError(TERMINAL, cause="the first run of a flaky child dies", fix="retry it with its fan-in")
    return {"run": ctx.job.run, "token": token}


@job(name="torture.revived", queue=QUEUE, idempotency_key=key, retry=SURVIVES, event_poll=1.0)
async def revived(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    """A fan-in over a flaky child and two plain ones that goes on at the first death
    (``fail_fast``) and then dies itself unless all three completed; the producer retries it with
    its children (``ops.retry(id, children=True)``) once it is dead, and it must then complete,
    each child enqueued once."""
    token = await Ledger.record(ctx)
    kids = [Enqueue(flaky, {"k": k, "flaky": i == 0}) for i, k in enumerate(child_keys(inp["k"], "flakychild"))]
    done = await ctx.step.wait_for_jobs("fan-in", await ctx.step.enqueue("fan-out", kids), fail_fast=True)
    states = [d["state"] for d in done]
    if states != ["completed"] * len(states):
        raise JobError(TERMINAL, cause=f"its children ended {states}", fix="retry it with its children")
    return {"run": ctx.job.run, "token": token, "children": states}


@job(name="torture.terminal", queue=QUEUE, idempotency_key=key, retry=FAILS)
async def terminal(ctx: Any, inp: dict[str, Any]) -> None:
    await Ledger.record(ctx)
    raise JobError(TERMINAL, cause="the torture run declines this job", fix="none: it is meant to die")


@job(name="torture.later", queue=QUEUE, idempotency_key=key, retry=SURVIVES)
async def later(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    token = await Ledger.record(ctx)
    if ctx.attempt < 2:
        raise JobError(LATER, cause="busy now, try in 0.3 s", fix="wait", retry_after=0.3)
    return {"run": ctx.job.run, "token": token}


@job(name="torture.busy", queue=QUEUE, idempotency_key=key, retry=SURVIVES)
async def busy(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    token = await Ledger.record(ctx)
    if ctx.attempt < 3:
        raise JobError(BUSY, cause="a retryable failure", fix="retry")
    return {"run": ctx.job.run, "token": token}


@job(name="torture.unclassified", queue=QUEUE, idempotency_key=key, retry=FAILS)
async def unclassified(ctx: Any, inp: dict[str, Any]) -> None:
    await Ledger.record(ctx)
    raise RuntimeError("an error nobody classified")


@task(name="torture.tick", cron="* * * * * *", queue=QUEUE, retry=SURVIVES)
async def tick(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    return {"run": ctx.job.run, "token": await Ledger.record(ctx)}
