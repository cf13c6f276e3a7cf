"""I25 under faults: nothing any worker of the torture run logged shows the DSN's password (the
workers' DSN carries one) or the marker every job's input carries, and every line a worker wrote
is a JSON event (but for its start banner), psycopg_pool's warnings included."""

from __future__ import annotations

import pytest

from bench.torture.cluster import PASSWORD
from bench.torture.load import MARKER
from bench.torture.run import TortureReport
from tests.torture.conftest import check

pytestmark = pytest.mark.timeout(420)


def test_i25_no_torture_log_shows_the_dsn_password_or_an_input(torture: TortureReport) -> None:
    check(torture, "no log shows the DSN's password or a job's input")
    texts = [p.read_text(errors="replace") for p in torture.logs.glob("worker-*.log")]
    assert len(texts) >= 3 + torture.fault_counts()["kill"]  # every incarnation's log was read
    assert any("jobs.worker.reconnecting" in t for t in texts)  # the faults were seen
    assert not any(PASSWORD in t or MARKER in t for t in texts)


def test_every_line_a_worker_logs_is_a_json_event(torture: TortureReport) -> None:
    assert torture.plain_lines == []
