"""A worker process of the bench: `python -m bench.child '{"kind": ..., "dsn": ...}'`.

kinds: loop (a bare psycopg loop over the raw table), loopq (the same loop over the engine's own
statements on jobs.job, no engine code), peer (pgqueuer's QueueManager), ours (the engine's
Worker embedded; the real `jobsctl worker` CLI is the other way bench/ours.py starts it). Each kind
imports what it runs and nothing at the module's top does: a process's imports count in a drain
from its spawn, so pgqueuer's process loads no psycopg and no engine module
(tests/engine/test_import_weight.py). Handlers are no-ops, or, with `"udp"` set, send
(enqueued_at, started_at) to the parent for the latency figures.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any


class Reporter:
    """Sends each job's enqueue and start times to the parent's datagram socket."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) if path else None

    def started(self, payload: Any) -> None:
        if self.sock is None or not isinstance(payload, dict) or "t" not in payload:
            return
        try:
            self.sock.sendto(struct.pack("dd", float(payload["t"]), time.time()), self.path)
        except OSError:  # the parent has stopped listening: the run is over
            pass


async def _noop(rep: Reporter, payload: Any) -> None:
    rep.started(payload)


async def loop_drain(cfg: dict[str, Any], rep: Reporter) -> None:
    import psycopg

    from bench.sqlq import sql

    claim, ack = sql("raw_claim"), sql("raw_ack_many")

    async def one(i: int) -> None:
        worker = f"loop-{os.getpid()}-{i}"
        async with await psycopg.AsyncConnection.connect(cfg["dsn"], autocommit=True, prepare_threshold=0) as conn:
            while True:
                cur = await conn.execute(claim, {"limit": cfg["batch"], "worker": worker})  # type: ignore[arg-type]
                rows = await cur.fetchall()
                if not rows:
                    if cfg.get("forever"):
                        await asyncio.sleep(0.001)
                        continue
                    return
                await asyncio.gather(*(_noop(rep, r[2]) for r in rows))
                await conn.execute(ack, {"ids": [r[0] for r in rows], "runs": [r[1] for r in rows], "worker": worker})  # type: ignore[arg-type]

    await asyncio.gather(*(one(i) for i in range(cfg.get("loops", 1))))


async def loopq_drain(cfg: dict[str, Any], rep: Reporter) -> None:
    """The worker's statements (its claim with lease, the fenced ack + attempt row), no engine code."""
    import psycopg

    from engine.drivers.postgres.jobs import ack_fence
    from engine.drivers.sqlfiles import Q

    # An experiment may pass its own statements (bench scripts comparing SQL variants in one run).
    claim, ack = cfg.get("claim_sql") or Q.worker_claim.text, cfg.get("ack_sql") or Q.job_ack_many.text

    async def one(i: int) -> None:
        worker = f"loopq-{os.getpid()}-{i}"
        async with await psycopg.AsyncConnection.connect(cfg["dsn"], autocommit=True, prepare_threshold=0) as conn:
            while True:
                now = datetime.now(UTC)
                cur = await conn.execute(
                    claim,
                    {  # type: ignore[arg-type]
                        "queues": [cfg["queue"]],
                        "floors": [None],
                        "limit": cfg["batch"],
                        "worker": worker,
                        "now": now,
                        "lease_seconds": 30.0,
                    },
                )
                # worker_claim's last row (id null) says when work is next due: not a job.
                rows = [r for r in await cur.fetchall() if r[0] is not None]
                if not rows:
                    return
                names = [d.name for d in cur.description or []]
                at = {n: k for k, n in enumerate(names)}
                await asyncio.gather(*(_noop(rep, r[at["input"]]) for r in rows))
                ids = [r[at["id"]] for r in rows]
                await conn.execute(
                    ack,
                    {  # type: ignore[arg-type]
                        "ids": "{" + ",".join(ids) + "}",
                        "worker": worker,
                        "fence": ack_fence(ids, [r[at["run"]] for r in rows], ["null"] * len(rows)),
                        "now": datetime.now(UTC),
                    },
                )

    await asyncio.gather(*(one(i) for i in range(cfg.get("loops", 1))))


async def peer_worker(cfg: dict[str, Any], rep: Reporter) -> None:
    import asyncpg
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.models import Job
    from pgqueuer.qm import QueueManager
    from pgqueuer.queries import Queries

    conn = await asyncpg.connect(**cfg["asyncpg"])
    qm = QueueManager(Queries(AsyncpgDriver(conn)))

    @qm.entrypoint("noop")
    async def noop(job: Job) -> None:
        rep.started(json.loads(job.payload) if job.payload else None)

    await qm.run(batch_size=cfg["batch"], dequeue_timeout=timedelta(seconds=cfg.get("poll", 30.0)))


async def ours_worker(cfg: dict[str, Any], rep: Reporter) -> None:
    """Our worker, embedded in a process of its own (the same Worker `jobsctl worker` runs)."""
    if cfg.get("udp"):
        os.environ["BENCH_UDP"] = cfg["udp"]  # read by bench.workload when it is imported
    from bench import workload
    from engine.drivers.postgres import PostgresDriver
    from engine.jobs import Registry
    from engine.runtime.worker import Worker, WorkerConfig

    settings = cfg.get("settings", {})
    driver = PostgresDriver(cfg["dsn"], pool_size=cfg.get("pool_size", 10))
    config = WorkerConfig(queues=(workload.QUEUE,), **settings)
    kind = _batched(Worker, cfg["wake_delay"]) if cfg.get("wake_delay") else Worker
    async with kind(driver, Registry.from_module(workload), config=config):
        await asyncio.Event().wait()  # the parent kills the process once its figure is taken


def _batched(worker: type[Any], delay: float) -> type[Any]:
    """bench.wakeups' variant: an idle worker woken waits ``delay`` before it claims, so one
    claim takes the jobs that arrived meanwhile."""

    class Batched(worker):  # type: ignore[misc,valid-type]
        async def _idle(self, due: Any) -> None:
            idle = not self._woken.is_set()
            await super()._idle(due)
            if idle:
                await asyncio.sleep(delay)

    return Batched


KINDS = {"loop": loop_drain, "loopq": loopq_drain, "peer": peer_worker, "ours": ours_worker}


def main() -> None:
    cfg = json.loads(sys.argv[1])
    rep = Reporter(cfg.get("udp"))
    coro = KINDS[cfg["kind"]](cfg, rep)
    if cfg.get("uvloop"):
        import uvloop

        uvloop.run(coro)
    else:
        asyncio.run(coro)


if __name__ == "__main__":
    main()
