"""An engine opened before a fork (gunicorn's --preload, a multiprocessing pool on Linux) works in
the child, on connections of the child's own, and the parent's engine goes on working after the
child ends. Each script runs in its own interpreter: a call on the parent's loop, whose thread the
child does not have, would wait for ever (the timeout fails the test)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PRELUDE = """
import asyncio, multiprocessing, os, sys
from engine import connect, job

@job(name="fork.hello", queue="fork", idempotency_key=lambda inp: str(inp["n"]))
async def hello(ctx, inp):
    return inp

eng = connect(sys.argv[1])
eng.enqueue(hello, {"n": 0})  # the parent's loop and connections are open at the fork
"""

SCRIPTS = {
    # A sync child that ends as gunicorn's workers do (sys.exit: atexit runs, the engine closes).
    "os.fork, sync calls": (
        """
        pid = os.fork()
        if pid == 0:
            print("child", eng.enqueue(hello, {"n": 0}).deduped, eng.enqueue(hello, {"n": 1}).deduped, flush=True)
            sys.exit(0)
        assert os.waitpid(pid, 0)[1] == 0
        print("parent", eng.enqueue(hello, {"n": 1}).deduped, eng.enqueue(hello, {"n": 2}).deduped)
        """,
        "child True False\nparent True False\n",
    ),
    # Pool processes making sync calls and async ones (asyncio.run: a loop of the child's own).
    "multiprocessing, sync and async calls": (
        """
        def child(n):
            async def main():
                return (await eng.aenqueue(hello, {"n": n + 10})).deduped
            return eng.enqueue(hello, {"n": n}).deduped, asyncio.run(main())

        with multiprocessing.get_context("fork").Pool(2) as pool:
            print("children", pool.map(child, [0, 1, 2, 3]))
        print("parent", [eng.enqueue(hello, {"n": n}).deduped for n in (3, 13, 4)])
        """,
        "children [(True, False), (False, False), (False, False), (False, False)]\nparent [True, True, False]\n",
    ),
}


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_an_engine_opened_before_a_fork_works_in_the_child_and_the_parent_after_it(
    script: str, pg_dsn: str, tmp_path: Path
) -> None:
    body, expected = SCRIPTS[script]
    path = tmp_path / "script.py"
    path.write_text(PRELUDE + textwrap.dedent(body) + "eng.close()\n")
    out = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", str(path), pg_dsn],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (out.returncode, out.stdout, out.stderr) == (0, expected, "")
