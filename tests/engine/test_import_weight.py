"""What a process imports, pinned by name: a worker's start-up is mostly its imports, so the modules
only the console, the CLI's reads and the operator actions use stay out of a worker process.

Each check runs in a fresh interpreter (this one has imported everything already) and reads
sys.modules after the imports a worker makes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The read models and the operator actions: the console's, the CLI reads', engine.api's.
READ_SIDE = (
    "engine.actions",
    "engine.records",
    "engine.introspect",
    "engine.projections",
    "engine.projections_filter",
    "engine.projections_why",
    "engine.series",
)
# The terminal UI and the CLI's toolkit: never a worker's.
UI = ("console", "textual", "rich", "typer")


def imported_by(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    return set(json.loads(done.stdout.splitlines()[-1]))


def loaded(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m in packages or m.startswith(tuple(p + "." for p in packages)))


def test_a_worker_process_does_not_import_the_console_read_models() -> None:
    # What an embedded worker imports (bench/child.py's ours_worker, an app's own process).
    modules = imported_by(
        "from engine.drivers.postgres import PostgresDriver\n"
        "from engine.jobs import Registry\n"
        "from engine.runtime.worker import Worker, WorkerConfig\n"
    )
    assert "engine.runtime.worker" in modules  # the probe imported what it says
    assert loaded(modules, READ_SIDE + UI + ("engine.api", "engine.schedule", "engine.outbox_types")) == []


def test_a_worker_process_imports_no_module_only_a_mistake_or_a_migration_needs() -> None:
    # difflib (a "did you mean" in an error), hashlib (a migration's checksum) and secrets (its
    # hmac and hashlib): ~2.5 ms of a worker's start that no running worker uses.
    modules = imported_by(
        "from engine.drivers.postgres import PostgresDriver\n"
        "from engine.jobs import Registry\n"
        "from engine.runtime.worker import Worker, WorkerConfig\n"
    )
    assert "engine.drivers.migrations" in modules  # the check at open is a worker's
    assert sorted(modules & {"difflib", "hashlib", "secrets", "hmac"}) == []


def test_a_worker_imports_prometheus_client_only_to_expose_its_metrics() -> None:
    # The worker's metrics are counted without the library (engine/runtime/metrics.py); its
    # package loads its HTTP exposition, ~25 ms of a process start.
    started = imported_by(
        "from engine.drivers.memory import MemoryDriver\n"
        "from engine.runtime.worker import Worker\n"
        "from bench import workload\n"
        "from engine.jobs import Registry\n"
        "w = Worker(MemoryDriver(), Registry.from_module(workload))\n"
        "w.metrics.outcome('bench', 'completed')\n"
        "assert w.metrics.count('bench', 'completed') == 1\n"
    )
    assert "engine.runtime.metrics" in started
    assert loaded(started, ("prometheus_client",)) == []
    exposed = imported_by(
        "from engine.runtime.metrics import Metrics\n"
        "m = Metrics()\n"
        "m.outcome('bench', 'completed')\n"
        "assert m.registry.get_sample_value('jobs_total', {'queue': 'bench', 'outcome': 'completed'}) == 1\n"
    )
    assert "prometheus_client" in exposed


def test_jobs_worker_imports_no_read_model_on_its_way_to_serving() -> None:
    # `jobsctl worker`: the CLI (typer, each command module registered), the target's jobs, the
    # maintained worker with its relay and scheduler, and the driver opened by engine.api.
    modules = imported_by(
        "from engine.cli import main\n"
        "from engine.cli.worker import load_target\n"
        "load_target('tests.engine.secrets_app')\n"
        "from engine.services.maintenance import maintained_worker\n"
        "from engine.services.relay import Relay\n"
        "from engine.services.scheduler import Scheduler\n"
        "from engine.api import open_driver\n"
        "from engine.drivers.postgres import PostgresDriver\n"
    )
    assert "typer" in modules  # the CLI is typer: only the read side and the UI stay out
    assert loaded(modules, READ_SIDE + ("console", "textual", "rich")) == []


def test_a_maintained_worker_without_cron_tasks_loads_no_scheduler_nor_cron_parser() -> None:
    # `jobsctl worker` over a module with no @task: the scheduler is not started, so neither it nor
    # engine.schedule and cronsim (~10 ms of a start) are imported; the relay runs, and imports
    # the outbox's row types only when it has a row to build.
    modules = imported_by(
        "from engine.cli.worker import load_target\n"
        "from engine.services.maintenance import maintained_worker\n"
        "from engine.drivers.postgres import PostgresDriver\n"
        "w = maintained_worker(PostgresDriver('postgresql:///unopened'), load_target('bench.workload'))\n"
        "assert w.scheduler is None and w.relay is not None and w.maintenance is not None\n"
    )
    assert "engine.services.maintenance" in modules and "engine.services.relay" in modules
    assert loaded(modules, ("engine.services.scheduler", "engine.tasks", "engine.schedule", "cronsim")) == []
    assert "engine.outbox_types" not in modules  # the relay builds its rows' type when it claims one


def test_importing_engine_alone_imports_none_of_its_public_names_modules() -> None:
    modules = imported_by("import engine")
    assert loaded(modules, ("engine",)) == ["engine"]


def test_the_public_names_still_resolve_from_engine() -> None:
    import engine
    from engine.errors import JobsError

    namespace: dict[str, object] = {}
    exec("from engine import *", namespace)
    assert sorted(n for n in namespace if not n.startswith("__")) == sorted(engine.__all__)
    assert set(engine.__all__) <= set(dir(engine))
    assert engine.JobError is JobsError
    assert engine.connect.__module__ == "engine.api"
    with pytest.raises(AttributeError, match="not_a_public_name"):
        engine.not_a_public_name  # noqa: B018


def test_the_benchs_peer_worker_process_imports_nothing_of_the_harness_beyond_its_child_module() -> None:
    # pgqueuer's worker process (bench/child.py, kind peer): its imports are inside the drain's
    # clock, so it loads pgqueuer, asyncpg and uvloop, and none of psycopg, the engine or the
    # harness's cluster, which our worker does not pay for it.
    modules = imported_by(
        "import bench.child\n"
        "import asyncpg, uvloop\n"
        "from pgqueuer.qm import QueueManager\n"
        "from pgqueuer.queries import Queries\n"
    )
    assert "pgqueuer.qm" in modules and "bench.child" in modules  # the probe imported what it says
    assert loaded(modules, ("psycopg", "engine", "bench")) == ["bench", "bench.child"]


def test_jobs_worker_reads_its_options_without_pydantic() -> None:
    # typer 0.29 coerces every option through a pydantic TypeAdapter built at the first parse
    # (~110 ms more a command on a 2-core machine, a worker's start among them); the dependency is
    # held below it (pyproject.toml). The probe parses a full `jobsctl worker` command line and stops
    # where the worker would import its target.
    modules = imported_by(
        "import sys\n"
        "import engine.cli.worker as w\n"
        "from engine.cli import main\n"
        "def stop(target):\n"
        "    raise SystemExit(0)\n"
        "w.load_target = stop\n"
        "sys.argv = ['jobs', 'worker', 'bench.workload', '--queues', 'bench', '--concurrency', '200',\n"
        "            '--batch-size', '200', '--grace', '5', '--loop', 'asyncio', '--no-relay']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
    )
    assert "engine.cli.worker" in modules and "typer" in modules  # the probe parsed through typer
    assert loaded(modules, ("pydantic", "pydantic_core")) == []
