"""Demo Work definitions (docs/work.md). durable_schedule's ``AppConfig.ready`` imports this module
(Work autodiscovery), so every process of the project -- a worker, the admin, a shell -- has them
registered.

* ``billing.send_invoice`` v1 -- ``reconcile_before_retry`` with the spec's five-slot plan
  (0, 5, 20, 60, 180 minutes, 240-minute circuit). Its effect is a ``demo_effect`` row; the
  reconciler looks for that row, so a crashed attempt whose effect happened is never repeated.
* ``demo.touch`` v1 -- ``idempotent`` legacy Work (no execution policy): repeating it is harmless.

Payload switches for tests and the demo: ``{"fail": true}`` makes the executor raise before its
effect; ``{"fail_attempts": n}`` makes the first n attempts raise (the demo's failure and retry);
``{"reconcile": "unknown"}`` makes the reconciler answer Unknown.
"""

from __future__ import annotations

from datetime import timedelta

from demo.models import Effect
from durable_schedule import work

MINUTE = timedelta(minutes=1)

INVOICE_RETRY = work.RetryPolicy(
    maximum_attempts=5,
    maximum_elapsed=timedelta(hours=4),
    initial_retry_delay=5 * MINUTE,
    maximum_retry_delay=timedelta(hours=1),
    lease_duration=MINUTE,
    renewal_cadence=timedelta(seconds=15),
    maximum_lease_lifetime=10 * MINUTE,
)
INVOICE_PLAN = work.AttemptPlan(
    "attempt-plan-v1", tuple(m * MINUTE for m in (0, 5, 20, 60, 180)), 240 * MINUTE
)

send_invoice = work.define(
    "billing.send_invoice", "v1",
    safety=work.ProviderSafety.RECONCILE_BEFORE_RETRY,
    policy=work.ExecutionPolicy.for_attempt_plan(INVOICE_RETRY, INVOICE_PLAN),
)


@send_invoice.executor
def send(ctx: work.WorkContext, payload: dict) -> dict:
    if payload.get("fail") or ctx.attempt <= payload.get("fail_attempts", 0):
        raise RuntimeError("the invoice provider refused the request")
    Effect.objects.create(work_id=ctx.work_id, attempt=ctx.attempt,
                          key=f"invoice:{payload['order']}")
    return {"invoice": payload["order"], "attempt": ctx.attempt}


@send_invoice.reconciler
def was_sent(ctx: work.WorkContext, payload: dict):
    if payload.get("reconcile") == "unknown":
        return work.Unknown("the provider cannot be asked")
    effect = Effect.objects.filter(work_id=ctx.work_id).order_by("id").first()
    if effect is None:
        return work.NotApplied()
    return work.Applied({"invoice": payload["order"], "attempt": effect.attempt})


touch = work.define("demo.touch", "v1", safety=work.ProviderSafety.IDEMPOTENT)


@touch.executor
def do_touch(ctx: work.WorkContext, payload: dict) -> dict:
    Effect.objects.create(work_id=ctx.work_id, attempt=ctx.attempt, key="touch")
    return {"touched": ctx.attempt}


# Definitions of the runner tests, registered wherever this module is (process_work imports it).
from demo import pipeline_targets, runner_targets  # noqa: E402,F401
