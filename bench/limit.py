"""The limit: what Postgres itself allows here, measured with pgbench (a C client, no Python).

Scripts are the named statements of sql/bench/pgbench.sql over the minimal table of raw.sql.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from psycopg import conninfo as ci

from bench.sqlq import sql
from engine.testing import find_server_binaries

_TPS = re.compile(r"tps = ([0-9.]+) \(without initial connection time\)")


def pgbench(dsn: str, script: str, *, batch: int, clients: int, transactions: int) -> float:
    """Jobs per second: pgbench's transactions per second times the jobs per transaction."""
    parts = ci.conninfo_to_dict(dsn)
    with tempfile.NamedTemporaryFile("w", suffix=".sql", prefix="bench-", delete=False) as f:
        f.write(sql(script) + ";\n")
        path = f.name
    argv = [
        str(find_server_binaries() / "pgbench"),
        "-n",
        "-M",
        "prepared",
        "-h",
        str(parts["host"]),
        "-p",
        str(parts.get("port") or 5432),
        "-U",
        str(parts.get("user") or "postgres"),
        "-d",
        str(parts["dbname"]),
        "-f",
        path,
        "-D",
        f"batch={batch}",
        "-c",
        str(clients),
        "-j",
        str(min(clients, 2)),
        "-t",
        str(transactions),
    ]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    finally:
        Path(path).unlink(missing_ok=True)
    m = _TPS.search(done.stdout)
    if done.returncode != 0 or m is None:
        raise RuntimeError(f"pgbench {script} failed: {done.stderr.strip()[-400:]}")
    return float(m.group(1)) * batch
