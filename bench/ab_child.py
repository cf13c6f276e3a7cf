"""One measurement of `python -m bench.ab`, in its own process, on the tree given first.

`python bench/ab_child.py TREE DSN FIGURE N` puts TREE first on sys.path (so `engine` and `bench`
are that tree's), installs TREE's schema on DSN, enqueues N no-op jobs through the public API
(one per call, or in batches of 100 or 1,000; or, for "drain", seeds N in batches of 1,000 and
times a Worker embedded in this process, concurrency 200, draining them) and prints {"rate": jobs/s, "cpu_us": client CPU a
job, and the engine it imported} as one line of JSON. Kept free of this tree's imports: it must run
any revision's engine. With BENCH_TRACING=1 (`python -m bench.tracing`) the engine and the worker
trace, into OpenTelemetry's SDK with a batch processor whose exporter drops the spans.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time


def main() -> None:
    tree, dsn, figure, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    sys.path.insert(0, tree)
    import engine
    from bench import workload
    from engine.api import Enqueue, connect
    from engine.schema import install_schema

    install_schema(dsn)
    traced: dict[str, object] = {}
    if os.environ.get("BENCH_TRACING") == "1":
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

        from engine.tracing import Tracing

        class Dropped(SpanExporter):
            def export(self, spans: object) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(Dropped()))
        traced["tracing"] = Tracing(tracer_provider=provider)

    async def drain() -> tuple[float, float]:
        import psycopg

        from bench.sqlq import sql
        from engine.drivers.postgres import PostgresDriver
        from engine.jobs import Registry
        from engine.runtime.worker import Worker, WorkerConfig

        eng = connect(dsn, **traced)
        try:
            for base in range(0, n, 1000):
                await eng.aenqueue_many([Enqueue(workload.noop, {"i": i}) for i in range(base, min(n, base + 1000))])
        finally:
            await eng.aclose()
        config = WorkerConfig(queues=(workload.QUEUE,), concurrency=200, batch_size=200, ack_batch=200)
        remaining = sql("ours_remaining")
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as poll:
            started, cpu = time.perf_counter(), time.process_time()
            async with Worker(PostgresDriver(dsn), Registry.from_module(workload), config=config, **traced):  # type: ignore[arg-type]
                while (await (await poll.execute(remaining, {"queue": workload.QUEUE})).fetchone())[0]:  # type: ignore[index]
                    await asyncio.sleep(0.01)
                elapsed, used = time.perf_counter() - started, time.process_time() - cpu
        return n / elapsed, used / n * 1e6

    async def go() -> tuple[float, float]:
        if figure == "drain":
            return await drain()
        eng = connect(dsn, **traced)
        try:
            await eng.aenqueue(workload.noop, {"i": -1})  # warm: pool open, schema checked, prepared
            await eng.aenqueue_many([Enqueue(workload.noop, {"i": -2}), Enqueue(workload.noop, {"i": -3})])
            started, cpu = time.perf_counter(), time.process_time()
            if figure == "single":
                for i in range(n):
                    await eng.aenqueue(workload.noop, {"i": i})
            else:
                size = int(figure.removeprefix("batch"))
                for base in range(0, n, size):
                    await eng.aenqueue_many(
                        [Enqueue(workload.noop, {"i": i}) for i in range(base, min(n, base + size))]
                    )
            return n / (time.perf_counter() - started), (time.process_time() - cpu) / n * 1e6
        finally:
            await eng.aclose()

    try:
        import uvloop

        rate, cpu_us = uvloop.run(go())
    except ImportError:
        rate, cpu_us = asyncio.run(go())
    print(json.dumps({"rate": rate, "cpu_us": cpu_us, "engine": engine.__file__}))


if __name__ == "__main__":
    main()
