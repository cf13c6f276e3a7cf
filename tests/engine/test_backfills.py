"""Backfill declarations and their pieces without a database: every refusal at declaration, the
unknown name's "did you mean", keyset's quoted identifiers, the Alembic graph walk, the
cancellable rate wait, and a whole pass on the memory driver over a plain function source."""

from __future__ import annotations

import asyncio
import math
import sys
from typing import Any

import pytest

from engine.backfills import BackfillControl, Backfills, Batch, Catalog, alembic_migrations, keyset
from engine.backfills.ledgers import ancestors
from engine.backfills.passes import Pacer
from engine.clock import FakeClock
from engine.drivers.memory import MemoryDriver
from engine.errors import JobsError
from engine.jobs import Registry
from engine.runtime.signal import RunSignal


def _count(conn: Any) -> int:
    return 0


def _src(conn: Any, after: Any, size: int) -> tuple[list[Any], Any]:
    return [], after


def _refused(code: str, make: Any) -> JobsError:
    with pytest.raises(JobsError) as info:
        make()
    assert info.value.code == code and info.value.fix
    return info.value


@pytest.mark.parametrize("size", [0, -1, 1.5, True, 100_001, "1000"])
def test_i22_a_bad_batch_size_is_refused_at_declaration(size: Any) -> None:
    err = _refused(
        "X_INVALID_DEFINITION", lambda: Backfills().backfill("a", source=_src, count=_count, batch_size=size)
    )
    assert "batch_size" in err.cause


@pytest.mark.parametrize("rate", [0, -2, math.inf, math.nan, "5", True])
def test_i22_a_bad_rate_is_refused_at_declaration(rate: Any) -> None:
    err = _refused("X_INVALID_DEFINITION", lambda: Backfills().backfill("a", source=_src, count=_count, rate=rate))
    assert "rate" in err.cause


def test_i22_refusals_at_declaration_name_the_option_and_the_fix() -> None:
    bf = Backfills()
    bf.backfill("accounts", source=_src, count=_count)(lambda batch: None)
    assert (
        "two backfills" in _refused("X_DUPLICATE_JOB", lambda: bf.backfill("accounts", source=_src, count=_count)).cause
    )
    err = _refused("X_INVALID_DEFINITION", lambda: bf.backfill("b", source=_src, count=_count, batchsize=10))
    assert "did you mean 'batch_size'" in err.cause
    _refused("X_INVALID_DEFINITION", lambda: bf.backfill("Bad Name", source=_src, count=_count))
    _refused("X_INVALID_DEFINITION", lambda: bf.backfill("c", source=object(), count=_count))
    _refused("X_INVALID_DEFINITION", lambda: bf.backfill("c", source=_src, count=5))
    _refused("X_INVALID_DEFINITION", lambda: bf.backfill("c", source=_src, count=_count, environments=[""]))
    err = _refused("X_INVALID_DEFINITION", lambda: bf.backfill("c", source=_src, count=_count, requires="0042"))
    assert "migrations=" in err.fix  # requires needs a ledger reader, or the gate would silently pass
    err = _refused("X_INVALID_DEFINITION", lambda: bf.backfill("c", source=keyset("accounts"), count=_count))
    assert "connect=" in err.fix  # a keyset reads a table: it needs the app's connection


def test_i22_a_backfill_is_a_job_the_worker_registers_with_one_live_pass_per_name() -> None:
    bf = Backfills()

    @bf.backfill("accounts", source=_src, count=_count)
    def accounts(batch: Batch) -> str:
        return f"handled {len(batch.rows)}"

    assert Registry([accounts]).names() == ["backfill:accounts"] and accounts.queue == "backfills"
    assert accounts.key_for({"run": "a"}) == accounts.key_for({"run": "b"})  # one dedupe key per name
    assert accounts(Batch([1, 2], None, 1, 2)) == "handled 2"  # calling it calls handle


def test_i22_an_unknown_name_lists_the_declared_ones_with_did_you_mean() -> None:
    bf = Backfills()
    for n in ("accounts_email", "orders_total"):
        bf.backfill(n, source=_src, count=_count)(lambda batch: None)
    err = _refused("X_BACKFILL_UNKNOWN", lambda: Catalog.of(bf).get("acounts_email"))
    assert "declared: accounts_email, orders_total" in err.cause and "did you mean 'accounts_email'" in err.cause
    assert err.fix.startswith("jobsctl backfill accounts_email --app ")
    err = _refused("X_BACKFILL_UNKNOWN", lambda: Catalog([]).get("x"))
    assert "declares none at all" in err.cause


def test_keyset_quotes_the_apps_identifiers_and_passes_values_as_parameters() -> None:
    ks = keyset('app.Accounts"; drop table x; --', "id", where="email_lower is null", columns=["email"])
    text = ks.as_string(None)
    assert text == (
        'select "id", "email" from "app"."Accounts""; drop table x; --" where "id" > %(jobs_after)s'
        ' and (email_lower is null) order by "id" limit %(jobs_size)s'
    )
    assert ks.as_string(None, first=True).startswith(
        'select "id", "email" from "app"."Accounts""; drop table x; --" where ('
    )
    _refused("X_INVALID_DEFINITION", lambda: keyset(""))
    _refused("X_INVALID_DEFINITION", lambda: keyset("t", params={"jobs_after": 1}))


def test_alembic_applied_revisions_are_the_heads_and_everything_below_them(monkeypatch: pytest.MonkeyPatch) -> None:
    graph = {"a1": None, "b2": "a1", "c3": "b2", "x3": "b2", "m4": ("c3", "x3"), "n5": "m4", "z9": "a1"}
    assert ancestors(["m4"], graph) == {"a1", "b2", "c3", "x3", "m4"}
    assert ancestors(["n5", "z9"], graph) == {"a1", "b2", "c3", "x3", "m4", "n5", "z9"}
    assert alembic_migrations(graph=graph).graph() is graph
    _refused("X_INVALID_DEFINITION", lambda: alembic_migrations())
    monkeypatch.setitem(sys.modules, "alembic", None)  # alembic is optional: not importable here
    err = _refused("X_INVALID_DEFINITION", lambda: alembic_migrations("migrations"))
    assert err.fix.startswith("alembic_migrations(graph=")


async def test_i22_the_rate_wait_ends_at_once_on_cancel(clock: FakeClock) -> None:
    signal = RunSignal()
    pacer = Pacer(0.01, clock, signal)  # one batch every 100 s
    await pacer.wait()  # the first batch does not wait
    waiting = asyncio.ensure_future(pacer.wait())
    for _ in range(10):  # a few loop turns: the wait's sleep is scheduled by the task it starts
        await asyncio.sleep(0)
    assert clock.sleepers == 1 and not waiting.done()
    signal.abort("cancelled")
    with pytest.raises(JobsError) as info:
        await asyncio.wait_for(waiting, 5)  # no clock advance: the cancel alone ends it
    assert info.value.code == "X_ABORTED"


async def test_i22_a_pass_on_the_memory_driver_sweeps_a_plain_source_once() -> None:
    data = {n: False for n in range(1, 26)}
    bf = Backfills(version="9")

    def read(conn: Any, after: Any, size: int) -> tuple[list[Any], Any]:
        keys = [k for k in sorted(data) if (after is None or k > after) and not data[k]][:size]
        return keys, keys[-1] if keys else after

    @bf.backfill("flags", source=read, count=lambda conn: sum(not v for v in data.values()), batch_size=10)
    def flags(batch: Batch) -> None:
        for k in batch.rows:
            assert not data[k]
            data[k] = True

    from engine.api import Engine
    from engine.services.maintenance import maintained_worker

    eng = Engine(MemoryDriver())
    ctl = BackfillControl(eng, bf, actor="alice", environment="test")
    done = asyncio.Event()
    started = await ctl.start("flags", write=True)
    async with maintained_worker(eng.driver, list(bf), poll_interval=0.05, on_execution=lambda ex: done.set()):
        await asyncio.wait_for(done.wait(), 10)
    assert all(data.values())
    [run] = await ctl.history("flags")
    assert (run.status, run.swept, run.batches, run.environment, run.app_version) == ("completed", 25, 3, "test", "9")
    assert (await ctl.pending()) == [] and started.job_id == run.job_id


async def test_i22_a_pass_whose_job_ended_where_no_pass_code_ran_reads_as_that_end(clock: FakeClock) -> None:
    """A queued pass cancelled as a job (`jobsctl cancel`) and a pass job that died unrun (its worker
    does not know the backfill: X_UNKNOWN_JOB) leave their ledger rows queued; the history, the
    progress and the status read the job's end instead, and a retry still continues the job."""
    from engine.api import Engine
    from engine.retry import RetryPolicy
    from engine.testing import Factory

    bf = Backfills(version="9")
    bf.backfill("flags", source=_src, count=_count)(lambda batch: None)
    eng = Engine(MemoryDriver(), clock=clock)
    f = Factory.of(eng)
    ctl = BackfillControl(eng, bf, actor="alice", environment="test")

    first = await ctl.start("flags", write=True)
    await f.cancel(first.job_id)
    [run] = await ctl.history("flags")
    assert (run.status, run.error) == ("cancelled", "its job was cancelled")
    [view] = await ctl.views()
    assert view.status == "pending" and view.gate is None

    second = await ctl.start("flags", write=True)
    unknown = JobsError("X_UNKNOWN_JOB", "no job named 'backfill:flags' is registered", "jobsctl describe --app MODULE")
    while (await f.get(second.job_id)).state.value != "dead":  # as the worker burns its attempts
        await f.fail(await f.claim(second.job_id), unknown, RetryPolicy(attempts=3))
        f.advance(60)
    run = (await ctl.history("flags"))[0]
    assert run.status == "failed" and (run.error or "").startswith("X_UNKNOWN_JOB: no job named")
    assert run.finished_at is not None
    progress = await ctl.progress("flags")
    assert progress is not None and progress.status == "failed"
    [view] = await ctl.views()
    assert (view.status, view.last and view.last.status) == ("failed", "failed")
    resumed = await ctl.retry("flags")
    assert resumed.changed and (await f.get(second.job_id)).state.value == "ready"
    assert (await ctl.history("flags"))[0].status == "queued"


def test_i22_a_resumed_pass_reads_its_rate_and_eta_over_its_current_run(clock: FakeClock) -> None:
    """Continued an hour after it failed, a pass that swept 1,000 rows then and 1,000 in the 10 s
    since its resume goes at 100 rows a second: its ETA for 3,000 more is 30 s. Read from its first
    start it went at 0.55 rows a second, and its ETA was an hour and a half."""
    from dataclasses import replace

    from engine.api import Engine
    from engine.records import BackfillRun

    bf = Backfills()
    bf.backfill("flags", source=_src, count=_count, batch_size=1000)(lambda batch: None)
    ctl = BackfillControl(Engine(MemoryDriver(), clock=clock), bf, environment="test")
    first = clock.now()
    run = BackfillRun("r", "flags", "test", "j", "running", False, False, first, planned=5000, swept=4, batches=2)
    clock.advance(10)
    p = ctl.progress_of(run)  # a first run: its rate from its start
    assert (p.rows_per_second, p.batches_per_second) == (0.4, 0.2)
    clock.advance(3590)
    resumed = clock.now()
    clock.advance(10)
    p = ctl.progress_of(replace(run, swept=2000, resumed_at=resumed, resumed_swept=1000))
    assert (p.rows_per_second, p.batches_per_second, p.remaining, p.eta_seconds) == (100.0, 0.1, 3000, 30.0)
