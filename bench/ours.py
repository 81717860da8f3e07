"""The one place that knows the runtime's names (``process_due``, ``work.define``, the Work pass):
scenarios call these helpers, so a renamed runtime function is fixed here once.

Every helper imports lazily: it runs in a child process after ``common.setup_django``.
"""

from __future__ import annotations

from typing import Any


def process_due_fn():
    from durable_schedule.processor import process_due

    return process_due


def _count(result: Any, *names: str) -> int:
    if isinstance(result, int):
        return result
    for name in names:
        value = result.get(name) if isinstance(result, dict) else getattr(result, name, None)
        if isinstance(value, int):
            return value
    raise TypeError(f"cannot read any of {names} from {result!r}")


def materialized(result: Any) -> int:
    """Occurrences with accepted Work produced by one ``process_due`` pass."""
    return _count(result, "materialized", "occurrences", "processed")


def claimed(result: Any) -> int:
    """Schedules a pass claimed (0: nothing was due)."""
    return _count(result, "claimed", "processed", "materialized")


_NOOP = None


def noop_definition():
    """The no-op Work definition the benchmarks enqueue and execute (registered once)."""
    global _NOOP
    if _NOOP is None:
        try:
            from durable_schedule import work

            define, safety = work.define, work.ProviderSafety.IDEMPOTENT
        except (ImportError, AttributeError):  # the package facade may not exist yet
            from durable_schedule.work.registry import define
            from durable_schedule.work.safety import ProviderSafety

            safety = ProviderSafety.IDEMPOTENT
        definition = define("bench.noop", version="v1", safety=safety)

        @definition.executor
        def _noop(ctx, payload):
            return None

        _NOOP = definition
    return _NOOP


def enqueue_one(scope: str, i: int, atomic: bool = True) -> None:
    """One Work accepted in its own transaction: inside ``transaction.atomic()`` (the form with
    a business write beside it: BEGIN, the statement, COMMIT) or standalone (no atomic block:
    the statement is its own autocommit transaction, the form of Procrastinate's ``defer`` and
    pgqueuer's ``enqueue``)."""
    from django.db import transaction

    d = noop_definition()
    if not atomic:
        d.enqueue(scope=scope, command=f"cmd-{i}", idempotency_key=f"key-{i}", payload={})
        return
    with transaction.atomic():
        d.enqueue(scope=scope, command=f"cmd-{i}", idempotency_key=f"key-{i}", payload={})


def enqueue_many_fn():
    """``work.enqueue_many`` (None before it existed: the scenario then says so)."""
    try:
        from durable_schedule.work import enqueue_many
    except ImportError:
        return None
    return enqueue_many


def enqueue_batch(scope: str, b: int, size: int, atomic: bool = True) -> None:
    """``size`` Work accepted by one ``enqueue_many`` in its own transaction (inside
    ``transaction.atomic()`` or standalone, as :func:`enqueue_one`)."""
    from django.db import transaction

    d = noop_definition()
    requests = [d.request(command=f"cmd-{b}-{i}", idempotency_key=f"key-{b}-{i}", payload={})
                for i in range(size)]
    if not atomic:
        enqueue_many_fn()(scope, requests)
        return
    with transaction.atomic():
        enqueue_many_fn()(scope, requests)


_SLEEP = None


def sleep_definition(seconds: float):
    """An I/O-bound Work definition: the executor sleeps ``seconds`` (an HTTP call's wait)."""
    global _SLEEP
    if _SLEEP is None:
        import time

        from durable_schedule.work.registry import define
        from durable_schedule.work.safety import ProviderSafety

        definition = define("bench.sleep", version="v1", safety=ProviderSafety.IDEMPOTENT)

        @definition.executor
        def _sleep(ctx, payload):
            time.sleep(payload["seconds"])
            return None

        _SLEEP = definition
    return _SLEEP


def concurrency_option() -> bool:
    """Whether this checkout's ``process_work`` has ``--concurrency`` (another part of the
    runtime builds it; the I/O scenario reports "not available" without it)."""
    from durable_schedule.management.commands.process_work import Command

    parser = Command().create_parser("manage.py", "process_work")
    return any("--concurrency" in a.option_strings for a in parser._actions)


def work_pass_fn():
    """``process_work_pass`` with the runtime's defaults (claim batch, heartbeat)."""
    try:
        from durable_schedule.work import process_work_pass
    except ImportError:  # the package facade may not exist yet
        from durable_schedule.work.runtime import process_work_pass
    return process_work_pass


def work_claimed(result: Any) -> int:
    return _count(result, "claimed")


def prototypes_child(barrier, url: str) -> dict:
    """Child of ``seed.build_prototypes``: which runtime parts exist, and the prototypes made
    through the public API with those that do (clock frozen by the caller)."""
    from bench import seed
    from bench.common import setup_django

    setup_django(url)
    caps = {}
    for name, fn in (("process_due", process_due_fn), ("work_pass", work_pass_fn),
                     ("define", noop_definition)):
        try:
            fn()
            caps[name] = True
        except Exception:  # noqa: BLE001 - any failure means "not available yet"
            caps[name] = False
    try:
        from durable_schedule import schedules

        caps["schedules_create"] = callable(schedules.create) and caps["define"]
        # The cron variant of materialization (cost per occurrence vs Every) needs
        # schedules.Cron, which another part of the runtime builds: reported, never faked.
        caps["cron"] = hasattr(schedules, "Cron")
    except Exception:  # noqa: BLE001
        caps["schedules_create"] = caps["cron"] = False
    barrier.wait(60)
    if caps["schedules_create"]:
        target = noop_definition().target(payload={})
        for schedule_id, interval in seed.PROTOTYPES:
            schedules.create(scope=seed.SCOPE, schedule_id=schedule_id,
                             spec=schedules.Every(interval), target=target)
        if caps["cron"]:
            # Due at the same instants as proto-due (every hour on the hour from T0).
            schedules.create(scope=seed.SCOPE, schedule_id=seed.CRON_PROTOTYPE,
                             spec=schedules.Cron("0 * * * *"), target=target)
    if caps["define"]:
        noop_definition().enqueue(scope=seed.SCOPE, command=seed.PROTO_WORK,
                                  idempotency_key="proto", payload={})
    return {"count": 0, "t0": 0.0, "t1": 0.0, "caps": caps}


class StatementCounter:
    """``connection.execute_wrapper`` that counts the statements the runtime sends (each one a
    round trip; psycopg adds a BEGIN and a COMMIT round trip per transaction on top)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, execute, sql, params, many, context):
        self.count += 1
        return execute(sql, params, many, context)
