"""Work definitions that the schedule tests target (tests/schedules).

Importing this module registers them in the importing process (``work.define`` is
process-wide). The schedule processor itself needs no registration (it rebuilds the stored
target snapshot), so subprocesses running ``process_schedules`` do not have to import it.
"""

from durable_schedule.work.registry import define, lookup


def _define(name: str, version: str, safety: str):
    return lookup(name, version) or define(name, version, safety=safety)


report = _define("schedules.test.report", "v1", "idempotent")
invoice = _define("schedules.test.invoice", "v1", "reconcile_before_retry")
