"""``manage.py durable_status``: schema vs floor, roles and exact grants, runtime epoch, scopes,
due backlog and oldest lateness, suspended schedules, Work by state, expired leases, partitions.

Exit status 0 when healthy, 1 when something needs an operator, 2 when the store itself is not
usable (not migrated, below the floor, roles or grants wrong). ``--json`` for machines,
``--roles`` prints the grant recipe for a DBA.
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand

from durable_schedule.operations.status import collect
from durable_schedule.store.inspection import grant_recipe


class Command(BaseCommand):
    help = "Report the health of the durable_schedule store; non-zero exit when unhealthy."
    requires_system_checks: list = []  # a broken store must still be reportable

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="print one JSON document")
        parser.add_argument("--roles", action="store_true",
                            help="print the role and grant recipe for a DBA")

    def handle(self, *args, **options):
        if options["roles"]:
            self.stdout.write(grant_recipe())
        report = collect()
        if options["json"]:
            self.stdout.write(json.dumps(report.to_json(), indent=2, sort_keys=True))
        else:
            self._print(report)
        if report.healthy:
            return
        store_broken = (not report.migrated or report.role_problems
                        or any(p.startswith("DS401") for p in report.problems))
        sys.exit(2 if store_broken else 1)

    def _print(self, r) -> None:
        w = self.stdout.write
        w(f"schema       {r.schema_version} (code {r.code_schema_version}, requires "
          f">= {r.required_schema}; store floor {r.compatibility_floor})")
        w(f"runtime epoch {r.runtime_epoch}")
        w(f"roles        {'ok' if not r.role_problems else '; '.join(r.role_problems)}")
        w(f"scopes       {r.scopes}")
        for name, q in (("schedules", r.schedules), ("work", r.work)):
            late = f"{q.oldest_lateness_seconds:.1f}s" if q.oldest_lateness_seconds else "-"
            w(f"{name:<12} due {q.due}, oldest lateness {late}, expired leases "
              f"{q.expired_leases}")
        w("work states  " + (", ".join(f"{k} {v}" for k, v in sorted(r.work_by_state.items()))
                             or "-"))
        w(f"partitions   {', '.join(r.partitions) or '-'}")
        for row in r.tz_rules:
            w(f"tz rules     {row['tz']} {row['fingerprint'][:16]}: {row['schedules']} cron "
              f"schedules, {row['mismatched']} mismatched")
        for s in r.suspended_schedules:
            w(f"suspended    {s.scope_id}/{s.schedule_id}: {s.reason} (since {s.suspended_at})")
        if r.healthy:
            w(self.style.SUCCESS("healthy"))
        else:
            for p in r.problems:
                w(self.style.ERROR(f"problem: {p}"))
