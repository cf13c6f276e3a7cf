"""`jobs-console --read-only` opens a read-only source (the one the screens, the palette and the
engine's operator all ask), and without the flag a writable one."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

import console.cli as cli
import console.source
from console.demo.world import seeded_source
from engine.errors import JobsError
from engine.projections import JobFilter
from engine.types import JobState


class Ran:
    return_code = 0

    def run(self) -> None:
        return None


@pytest.mark.parametrize("flags, read_only", [(["--read-only"], True), ([], False)])
async def test_the_read_only_flag_opens_a_source_that_refuses_every_action(
    monkeypatch: pytest.MonkeyPatch, flags: list[str], read_only: bool
) -> None:
    opened: list[Any] = []

    def open_source(dsn: str, **kw: Any) -> Any:  # the database, as the seeded world
        opened.append(seeded_source(read_only=kw["read_only"]))
        return opened[-1]

    monkeypatch.setattr(console.source, "open_source", open_source)
    monkeypatch.setattr(cli, "make_app", lambda source, opts, cli_dsn=None: Ran())
    r = CliRunner(env={"JOBS_DSN": None}).invoke(cli.app, [*flags, "--dsn", "postgresql://ann@db.internal/app"])
    assert r.exit_code == 0, r.output
    [source] = opened
    assert source.read_only is read_only
    dead = (await source.jobs(JobFilter(state=JobState.DEAD))).items[0].id
    if read_only:
        with pytest.raises(JobsError) as err:
            await source.retry(dead)
        assert err.value.code == "X_READ_ONLY"
    else:
        assert (await source.retry(dead)).changed
