"""README.md's transactional outbox sample (`checkout.py`) runs as written, its sync half and its
async half alike, against a real PostgreSQL: each order is committed with its staged jobs, and a
worker of the same module runs the jobs the relay publishes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[2]
WRITTEN_DSN = '"postgresql://app@db/app"'
JOBSCTL = "import sys; from engine.cli import main; sys.argv[0] = 'jobsctl'; main()"


def _sample() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Transactional outbox", 1)[1].split("\n## ", 1)[0]
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", section, flags=re.S) if b.startswith("# checkout.py")]
    assert block.count(WRITTEN_DSN) == 1, "the sample names its database once, as DSN"
    return block


def _run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *argv], cwd=cwd, capture_output=True, text=True, timeout=60)


def test_the_readmes_outbox_sample_stages_in_both_halves_and_its_jobs_run(pg_dsn: str, tmp_path: Path) -> None:
    (tmp_path / "checkout.py").write_text(_sample().replace(WRITTEN_DSN, repr(pg_dsn)))
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("create table orders (id int primary key, total int)")  # the reader's own table
    done = _run(tmp_path, "checkout.py")
    assert done.returncode == 0, done.stderr[-3000:]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        orders = [r[0] for r in conn.execute("select id from orders order by id")]
        staged = conn.execute("select count(*) from jobs.outbox where published_at is null").fetchone()
    assert orders == [42, 44]
    assert staged == (4,)  # receipts 42 (delayed 5 s), 43, 44, and ship 43

    worker = _run(tmp_path, "-c", JOBSCTL, "worker", "checkout", "--dsn", pg_dsn, "--burst")
    assert worker.returncode == 0, worker.stderr[-3000:]
    assert "3 completed" in worker.stdout  # the delayed receipt of 42 waits for its time, as a burst leaves it
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        jobs = dict(conn.execute("select input->>'order' || ' ' || name, state from jobs.job").fetchall())
    assert jobs == {
        "42 send_receipt": "delayed",
        "43 send_receipt": "completed",
        "43 ship": "completed",
        "44 send_receipt": "completed",
    }
