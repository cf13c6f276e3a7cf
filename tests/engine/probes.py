"""What the probe tests share: a port nothing listens on, one HTTP GET of a probe, and a `jobsctl`
service started as a process on a metrics port, its first line (printed once it has started)
handed to the test, terminated at the end and expected to exit 0."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def get(port: int, path: str) -> tuple[int, str]:
    """A probe's status and body (the caller's loop does not turn while this waits: a blocked loop)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def free_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return int(port)


@contextmanager
def service(args: list[str], port: int) -> Iterator[str]:
    """``jobsctl ARGS --metrics-port PORT`` running; yields its first line, and its stderr (kept in
    a file: a pipe nobody reads could fill and stall it) after a line that is not a start line."""
    errors = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(
        [sys.executable, "-c", "from engine.cli import main; main()", *args, "--metrics-port", str(port)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=errors,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("jobsctl "):
            errors.seek(0)
            line += errors.read()
        yield line
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        errors.close()
    assert proc.returncode == 0
