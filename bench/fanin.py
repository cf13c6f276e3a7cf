"""What a fan-in costs: `python -m bench.fanin [--runs 5] [--children 100] [--span 3.3]`.

On a throwaway embedded PostgreSQL, a fresh database per run:

- look.n10 / n100 / n1000: one look of a wait (``driver.job_get_many`` over that many enqueued
  job ids, the statement ``ctx.step.wait_for_jobs`` runs at each look), ms, the median of 50.
- fanout.n10 / n100 / n1000: one fan-out step of that many jobs on a claimed run, ms, the median
  of 15: ``ctx.step.enqueue`` (the jobs and the step's write in one commit), against its baseline,
  the same jobs through ``eng.aenqueue_many`` inside ``ctx.step.run`` (two commits), alternating.
- lag: a parent enqueues ``--children`` jobs in a step and waits for them with
  ``ctx.step.wait_for_jobs``; the children sleep for times spread evenly over ``--span`` seconds
  and one embedded worker runs them all at once (concurrency children + 1). From the database's
  own timestamps: ``span`` is the wait's start (its step) to the last child's finish, ``lag`` the
  last child's finish to the parent's, ``looks`` the parent's claims after its first run. The
  baseline is the wait's own bound at that point: a look every max(POLL_FIRST, POLL_SHARE x the
  time waited) (engine/runtime/fanin.py), so lag / bound <= 1 means no look came later than the
  schedule says.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from engine.api import Engine, Enqueue
from engine.drivers.postgres import PostgresDriver
from engine.jobs import job
from engine.runtime.fanin import POLL_FIRST, POLL_SHARE
from engine.runtime.signal import RunSignal
from engine.runtime.steps import StepApi
from engine.types import JobState

Q = "bench_fanin"


@job(name="bench_fanin.child", queue=Q, idempotency_key=lambda inp: f"{inp['run']}:{inp['n']}")
async def child(ctx: Any, inp: dict[str, Any]) -> dict[str, int]:
    await asyncio.sleep(inp["s"])
    return {"n": inp["n"]}


@job(name="bench_fanin.parent", queue=Q, idempotency_key=lambda inp: str(inp["run"]))
async def parent(ctx: Any, inp: dict[str, Any]) -> dict[str, int]:
    n, span = inp["children"], inp["span"]
    specs = [{"run": inp["run"], "n": i, "s": span * (i + 1) / n} for i in range(n)]
    ids = await ctx.step.enqueue("fan-out", [Enqueue(child, s) for s in specs])
    done = await ctx.step.wait_for_jobs("fan-in", ids)
    return {"completed": sum(d["state"] == "completed" for d in done)}


async def look_ms(dsn: str, n: int, samples: int = 50) -> float:
    eng = Engine(PostgresDriver(dsn))
    try:
        ids = [
            r.id for r in await eng.aenqueue_many([Enqueue(child, {"run": "look", "n": i, "s": 0}) for i in range(n)])
        ]
        await eng.driver.job_get_many(job_ids=ids)  # warm: prepared, cached
        times = []
        for _ in range(samples):
            t0 = time.perf_counter()
            rows = await eng.driver.job_get_many(job_ids=ids)
            times.append(time.perf_counter() - t0)
            assert len(rows) == n
        return round(statistics.median(times) * 1000, 3)
    finally:
        await eng.aclose()


async def fanout_ms(dsn: str, n: int, samples: int = 15) -> dict[str, float]:
    """One fan-out step of ``n`` jobs, ms (median of ``samples``): ``enqueue`` in one commit with
    its step, ``run`` through aenqueue_many inside ctx.step.run, alternating on one claimed run."""
    eng = Engine(PostgresDriver(dsn))
    try:
        await eng.aenqueue(parent, {"run": f"fanout{n}", "children": 1, "span": 1})
        (cj,) = (
            await eng.driver.worker_claim(queues=[Q], limit=1, worker="bench", now=eng.clock.now(), lease_seconds=600)
        ).jobs
        api = StepApi(
            driver=eng.driver,
            claim=cj.claim,
            row=cj.row,
            clock=eng.clock,
            signal=RunSignal(),
            step_timeout=None,
            event_poll=30.0,
            engine=lambda: eng,
        )

        def specs(tag: str) -> list[Enqueue]:
            return [Enqueue(child, {"run": tag, "n": i, "s": 0}) for i in range(n)]

        def two_commits(tag: str) -> Callable[[], Awaitable[list[str]]]:
            async def fan_out() -> list[str]:  # async: the step runs it on the loop, not in a thread
                return [r.id for r in await eng.aenqueue_many(specs(tag))]

            return fan_out

        times: dict[str, list[float]] = {"enqueue": [], "run": []}
        for i in range(samples + 1):  # the first of each warms its statements
            for how in ("enqueue", "run"):
                tag = f"{how}{n}.{i}"
                t0 = time.perf_counter()
                if how == "enqueue":
                    ids = await api.enqueue(tag, specs(tag))
                else:
                    ids = await api.run(tag, two_commits(tag))
                if i:
                    times[how].append(time.perf_counter() - t0)
                assert len(ids) == n
        return {how: round(statistics.median(ts) * 1000, 3) for how, ts in times.items()}
    finally:
        await eng.aclose()


async def lag(dsn: str, children: int, span: float, run: int) -> dict[str, float]:
    eng = Engine(PostgresDriver(dsn))
    try:
        top = (await eng.aenqueue(parent, {"run": run, "children": children, "span": span})).id
        async with eng.worker([parent, child], queues=[Q], concurrency=children + 1, maintenance=False, relay=False):
            while (await eng.aget(top)).state is not JobState.COMPLETED:
                await asyncio.sleep(0.01)
        row = await eng.aget(top)
        steps = {s.name: s for s in await eng.driver.step_load(job_id=top)}
        kids = await eng.driver.job_get_many(job_ids=steps["fan-out"].result)
        assert row.finished_at is not None and all(k.finished_at is not None for k in kids)
        last = max(k.finished_at for k in kids if k.finished_at is not None)
        started = steps["fan-in"].started_at
        waited = (last - started).total_seconds()
        lagged = (row.finished_at - last).total_seconds()
        bound = max(POLL_FIRST, POLL_SHARE * waited)
        return {"span": waited, "lag": lagged, "bound": bound, "looks": row.run - 1}
    finally:
        await eng.aclose()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.fanin", description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--children", type=int, default=100)
    ap.add_argument("--span", type=float, default=3.3, help="seconds the children's sleeps spread over")
    args = ap.parse_args(argv)
    if args.runs < 1 or not 1 <= args.children <= 1000 or args.span <= 0:
        ap.error("--runs >= 1, --children 1..1000, --span > 0")
    from bench.cluster import installed_database
    from engine.testing.embedded_pg import EmbeddedPostgres

    pg = EmbeddedPostgres(max_connections=max(100, args.children + 20))
    admin = pg.start()

    def fresh(name: str) -> str:
        return installed_database(admin, name)

    try:
        looks = {n: asyncio.run(look_ms(fresh(f"fanin_look{n}"), n)) for n in (10, 100, 1000)}
        fanouts = {n: asyncio.run(fanout_ms(fresh(f"fanin_out{n}"), n)) for n in (10, 100, 1000)}
        runs = [asyncio.run(lag(fresh(f"fanin_lag{i}"), args.children, args.span, i)) for i in range(args.runs)]
    finally:
        pg.close()
    print(f"python -m bench.fanin --runs {args.runs} --children {args.children} --span {args.span:g}")
    for n, ms in looks.items():
        print(f"look.n{n:<5} {ms:8.3f} ms   (one job_get_many over {n} ids, median of 50)")
    for n, f in fanouts.items():
        print(
            f"fanout.n{n:<5}{f['enqueue']:8.3f} ms   (ctx.step.enqueue, one commit; ctx.step.run of aenqueue_many, "
            f"two commits: {f['run']:.3f} ms, ratio {f['enqueue'] / f['run']:.2f}x)"
        )

    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    spread = ", ".join(f"{r['lag']:.3f}" for r in runs)
    print(f"span         {med('span'):8.3f} s    (the wait's start to its last child's finish)")
    print(f"lag          {med('lag'):8.3f} s    (the last child's finish to the parent's; runs: {spread})")
    print(f"bound        {med('bound'):8.3f} s    (the schedule's gap at that point)")
    print(f"lag/bound    {statistics.median(r['lag'] / r['bound'] for r in runs):8.2f}")
    print(f"looks        {med('looks'):8.0f}      (the parent's claims after its first run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
