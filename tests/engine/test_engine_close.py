"""An engine closes quietly: as a context manager (``with connect(...) as eng:``, ``async with``),
by ``close()``/``aclose()``, or at interpreter exit when a script never closes it. Each script runs
in its own interpreter, whose stderr must stay empty (no "Task was destroyed but it is pending!",
no unclosed-connection ResourceWarning)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PRELUDE = """
import asyncio, sys
from engine import connect, job

@job(name="close.hello", queue="close", idempotency_key=lambda inp: str(inp["n"]))
async def hello(ctx, inp):
    return inp

DSN = sys.argv[1]
"""

SCRIPTS = {
    "never-closed-sync": """
        eng = connect(DSN)
        eng.enqueue(hello, {"n": 1})
    """,
    "never-closed-async": """
        eng = connect(DSN)
        async def main():
            await eng.aenqueue(hello, {"n": 1})
        asyncio.run(main())
    """,
    "never-closed-sync-and-async": """
        eng = connect(DSN)
        eng.enqueue(hello, {"n": 1})
        async def main():
            await eng.aenqueue(hello, {"n": 2})
        asyncio.run(main())
    """,
    "asyncio-run-per-call": """
        eng = connect(DSN)
        for n in range(3):
            asyncio.run(eng.aenqueue(hello, {"n": n}))
    """,
    "with": """
        with connect(DSN) as eng:
            eng.enqueue(hello, {"n": 1})
    """,
    "async-with": """
        async def main():
            async with connect(DSN) as eng:
                await eng.aenqueue(hello, {"n": 1})
        asyncio.run(main())
    """,
    "aclose-after-sync-calls": """
        eng = connect(DSN)
        eng.enqueue(hello, {"n": 1})
        async def main():
            await eng.aenqueue(hello, {"n": 2})
            await eng.aclose()
        asyncio.run(main())
    """,
}


@pytest.mark.parametrize("script", sorted(SCRIPTS))
@pytest.mark.parametrize("backend", ["postgres", "memory"])
def test_an_engine_closes_without_a_warning_however_its_script_ends(
    script: str, backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    dsn = request.getfixturevalue("pg_dsn") if backend == "postgres" else "memory://"
    path = tmp_path / "script.py"
    path.write_text(PRELUDE + textwrap.dedent(SCRIPTS[script]) + "print('done')\n")
    out = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", str(path), dsn],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (out.returncode, out.stdout, out.stderr) == (0, "done\n", "")
