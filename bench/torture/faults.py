"""The faults the torture run injects, and when.

- ``kill``: SIGKILL of a random worker (it is started again a moment later: that is the fault's
  own recovery, the one restart the harness does);
- ``backend``: pg_terminate_backend of random sessions of the application's login;
- ``restart``: PostgreSQL stopped (fast) and started again on the same data directory;
- ``stall``: a worker with jobs in flight SIGSTOPped past its lease, then SIGCONTed: it must not
  ack what it lost, and must notice the loss;
- ``exhaust``: idle-in-transaction sessions of the application's login holding every connection
  PostgreSQL will give it, for a while;
- ``term``: SIGTERM of a random worker, the graceful drain an orchestrator asks for (one lands
  while PostgreSQL restarts): it must exit 0 within its grace and close bound; then it is started
  again;
- ``skew``: not an event: the workers run with clocks apart within the documented margin.

A plan is a list of (offset in seconds, kind). ``storm`` overlaps them (kills every few seconds
throughout, each other kind once or more); ``isolated`` gives each kind a quiet window before and
after, so the completion rate around it measures that fault alone.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.rows import dict_row

from bench.torture.cluster import TortureCluster
from bench.torture.fleet import Fleet, Incarnation
from bench.torture.sqlq import sql

KINDS = ("kill", "backend", "restart", "stall", "exhaust", "term")
RESTART_DOWN = 1.0  # seconds the server stays down
EXHAUST_HOLD = 4.0  # seconds the sessions hold every connection
KILL_RESPAWN = 1.0  # seconds before a killed worker's slot is started again
TERM_SLACK = (
    5.0  # seconds past its drain bound a SIGTERMed worker may take to exit (process start-up, a loaded machine)
)
STALL_SETTLE = 0.5  # seconds between the SIGSTOP and reading what the stopped worker holds
STALL_SPARE = 10.0  # seconds a woken stalled worker is not killed: time to find and log its losses


@dataclass
class Fault:
    kind: str
    at: float  # monotonic: when it was injected
    until: float  # monotonic: when the injection itself ended (the server back, the stall over)
    detail: dict[str, Any] = field(default_factory=dict)


def storm_plan(seconds: float, kill_every: float = 7.0) -> list[tuple[float, str]]:
    """Kills every ``kill_every`` seconds from the start; a backend kill every ~10 s; one restart,
    one stall, one exhaustion spread over the run (more of each in a longer run)."""
    plan: list[tuple[float, str]] = []
    t = kill_every / 2
    while t < seconds:
        plan.append((t, "kill"))
        t += kill_every
    t = 5.0
    while t < seconds:
        plan.append((t, "backend"))
        t += 10.0
    rounds = max(1, int(seconds // 120))
    for r in range(rounds):
        base = r * seconds / rounds
        span = seconds / rounds
        plan += [(base + span * 0.3, "restart"), (base + span * 0.5, "stall"), (base + span * 0.75, "exhaust")]
        plan += [(base + span * 0.3 + 0.3, "term"), (base + span * 0.6, "term")]  # the first: during the restart
    return sorted(plan)


def isolated_plan(seconds: float, window: float = 30.0) -> list[tuple[float, str]]:
    """Each kind once after a quiet ``window`` (the rate before), the next after another window
    (the rate after), in a cycle while the run lasts."""
    plan: list[tuple[float, str]] = []
    t, i = window, 0
    while t + window <= seconds:
        plan.append((t, KINDS[i % len(KINDS)]))
        i += 1
        t += window + (15.0 if KINDS[(i - 1) % len(KINDS)] == "stall" else 0.0)
    return plan


class Injector:
    def __init__(self, cluster: TortureCluster, fleet: Fleet, *, lease: float, seed: int = 1) -> None:
        self.cluster, self.fleet, self.lease = cluster, fleet, lease
        self.rng = random.Random(seed)
        self.faults: list[Fault] = []
        self.stalls: list[dict[str, Any]] = []  # per stall: the worker and the jobs it held
        self._respawns: set[asyncio.Task[None]] = set()

    async def run(self, plan: list[tuple[float, str]], start: float) -> None:
        """Each fault at its time, whatever the others are doing (a stall lasts a while)."""
        await asyncio.gather(*(self._at(start + offset, kind) for offset, kind in plan))
        if self._respawns:
            await asyncio.gather(*self._respawns, return_exceptions=True)

    async def _at(self, when: float, kind: str) -> None:
        await asyncio.sleep(max(0.0, when - time.monotonic()))
        await getattr(self, kind)()

    def _record(self, kind: str, at: float, **detail: Any) -> None:
        self.faults.append(Fault(kind, at, time.monotonic(), detail))

    async def kill(self) -> None:
        live = self.fleet.targets()
        if not live:
            return
        victim = self.rng.choice(live)
        at = time.monotonic()
        await asyncio.to_thread(self.fleet.kill, victim)
        self._record("kill", at, pid=victim.pid, slot=victim.slot)
        task = asyncio.ensure_future(self._respawn(victim.slot))
        self._respawns.add(task)
        task.add_done_callback(self._respawns.discard)

    async def _respawn(self, slot: int) -> None:
        await asyncio.sleep(KILL_RESPAWN)
        self.fleet.spawn(slot)

    async def term(self) -> None:
        """SIGTERM: the worker drains (stops claiming, gives in-flight work its grace, releases the
        rest) and exits 0 within grace + close timeout, whatever the database is doing."""
        live = self.fleet.targets()
        if not live:
            return
        victim = self.rng.choice(live)
        at = time.monotonic()
        code, seconds = await asyncio.to_thread(self.fleet.term, victim, self.fleet.drain_bound + TERM_SLACK)
        self._record("term", at, pid=victim.pid, slot=victim.slot, exit=code, seconds_to_exit=seconds)
        self.fleet.spawn(victim.slot)

    async def backend(self) -> None:
        at = time.monotonic()
        try:
            async with await psycopg.AsyncConnection.connect(self.cluster.admin, autocommit=True) as conn:
                pids = [r[0] for r in await (await conn.execute(sql("torture_app_backends"))).fetchall()]  # type: ignore[arg-type]
                chosen = self.rng.sample(pids, min(len(pids), self.rng.randint(1, 3)))
                for pid in chosen:
                    await conn.execute(sql("torture_terminate"), {"pid": pid})  # type: ignore[arg-type]
        except psycopg.Error as exc:  # the server is away (another fault): nothing was ended
            self._record("backend", at, ended=0, error=str(exc).splitlines()[0] if str(exc) else "")
            return
        self._record("backend", at, ended=len(chosen), of=len(pids))

    async def restart(self) -> None:
        at = time.monotonic()
        await asyncio.to_thread(self.cluster.stop)
        await asyncio.sleep(RESTART_DOWN)
        await asyncio.to_thread(self.cluster.start_again)
        self._record("restart", at, down=RESTART_DOWN)

    async def stall(self) -> None:
        """SIGSTOP a worker holding jobs, past its lease and the rescuer's next pass; then SIGCONT.
        The jobs it holds are read once it is stopped (a frozen process settles nothing more; a
        statement it had on the wire gets a moment to land first)."""
        victim: Incarnation | None = None
        deadline = time.monotonic() + 10.0
        while victim is None:  # a worker with work in flight (the slow jobs make sure of one)
            busy = {r["pid"] for r in await self._running()}
            now = time.monotonic()
            live = {i.pid: i for i in self.fleet.targets()}
            candidates = sorted(pid for pid in busy if pid in live) or (sorted(live) if now > deadline else [])
            if candidates:
                victim = live[self.rng.choice(candidates)]
            else:
                await asyncio.sleep(0.1)
        at = time.monotonic()
        self.fleet.stop(victim)
        await asyncio.sleep(STALL_SETTLE)
        held = [
            {"job_id": r["id"], "run": r["run"], "worker": r["claimed_by"]}
            for r in await self._running()
            if r["pid"] == victim.pid
        ]
        # The lease, then the maintenance leader's lease (the victim may lead), then a pass.
        hold = 3 * self.lease + 5.0
        await asyncio.sleep(max(0.0, at + hold - time.monotonic()))
        if victim.proc.poll() is None:
            self.fleet.cont(victim, spare=STALL_SPARE)
        self._record("stall", at, pid=victim.pid, held=len(held), seconds=hold)
        self.stalls.append({"pid": victim.pid, "log": str(victim.log), "held": held, "at": at})

    async def _running(self) -> list[dict[str, Any]]:
        try:
            async with await psycopg.AsyncConnection.connect(
                self.cluster.admin, autocommit=True, row_factory=dict_row
            ) as conn:
                return await (await conn.execute(sql("torture_running"))).fetchall()  # type: ignore[arg-type]
        except psycopg.Error:
            return []

    async def exhaust(self) -> None:
        """Open idle-in-transaction sessions as the application until PostgreSQL refuses one."""
        at = time.monotonic()
        holders: list[psycopg.AsyncConnection[Any]] = []
        refused = ""
        try:
            while len(holders) < self.cluster.max_connections:
                try:
                    conn = await psycopg.AsyncConnection.connect(
                        self.cluster.app, connect_timeout=3, application_name="torture-exhaust"
                    )
                except psycopg.Error as exc:
                    refused = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
                    break
                holders.append(conn)
                await conn.execute(sql("torture_hold"))  # type: ignore[arg-type]
            await asyncio.sleep(EXHAUST_HOLD)
        finally:
            for conn in holders:
                try:
                    await conn.close()
                except Exception:
                    pass
        self._record("exhaust", at, held=len(holders), seconds=EXHAUST_HOLD, refused=refused[:120])

    def counts(self) -> dict[str, int]:
        out = {kind: 0 for kind in KINDS}
        for f in self.faults:
            out[f.kind] += 1
        return out
