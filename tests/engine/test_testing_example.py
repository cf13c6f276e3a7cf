"""The README's "Testing your handlers" example runs as written, in a pytest of its own."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _readme_files() -> dict[str, str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Testing your handlers", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return {block.splitlines()[0].removeprefix("# "): block for block in blocks}


def test_the_readme_testing_example_passes_on_a_throwaway_postgres(tmp_path: Path) -> None:
    files = _readme_files()
    assert set(files) == {"conftest.py", "test_billing.py"}
    for name, body in files.items():
        (tmp_path / name).write_text(body)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "asyncio_mode=strict", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=50,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "3 passed" in done.stdout
