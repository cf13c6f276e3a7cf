"""The app module tests/engine/test_log_secrets.py runs `jobsctl worker` on: no tests here. Each
handler sees an input carrying a marker the worker's logs must never show."""

from __future__ import annotations

from typing import Any

from engine import JobError, RetryPolicy
from engine.jobs import job

QUEUE = "secrets"


@job(name="secret.ok", queue=QUEUE, idempotency_key=lambda inp: inp["k"])
async def ok(ctx: Any, inp: dict[str, Any]) -> dict[str, Any]:
    return {"echo": inp["card"]}  # stored as the result, never logged


@job(name="secret.declined", queue=QUEUE, idempotency_key=lambda inp: inp["k"])
async def declined(ctx: Any, inp: dict[str, Any]) -> None:
    raise JobError("X_SECRET_DECLINED", cause="the issuer declined the card", fix="ask for another card")


@job(
    name="secret.flaky",
    queue=QUEUE,
    idempotency_key=lambda inp: inp["k"],
    retry=RetryPolicy(attempts=2, backoff="fixed", delay=0.05),
)
async def flaky(ctx: Any, inp: dict[str, Any]) -> None:
    raise RuntimeError("the gateway hung up")


@job(name="secret.waits", queue=QUEUE, idempotency_key=lambda inp: inp["k"])
async def waits(ctx: Any, inp: dict[str, Any]) -> Any:
    print("WAITING", flush=True)  # the test's signal that the run reached its wait
    return await ctx.step.wait_for_event("approved", event="secret.approved", match={"k": inp["k"]}, timeout=3600)
