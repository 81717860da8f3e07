"""``manage.py durable_status``: schema vs floor, roles and exact grants, runtime epoch, scopes,
due backlog and oldest lateness against the thresholds, live and dead runners, suspended
schedules, Work by state and last hour's throughput, expired leases, partitions.

Exit status 0 when healthy, 1 when something needs an operator, 2 when the store itself is not
usable (unreachable, not migrated, below the floor, roles or grants wrong). ``--json`` for
machines (a valid document in every case, an unreachable store included), ``--metrics`` for the
Prometheus text exposition of the store gauges, ``--roles`` prints the grant recipe for a DBA.
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from durable_schedule.errors import DurableError, InvalidArgument, TimeZoneSupportOff
from durable_schedule.operations.probe import DEFAULT_TIMEOUT_SECONDS, check_timeout
from durable_schedule.operations.status import collect, unreachable
from durable_schedule.runner.cli import seconds
from durable_schedule.store.inspection import grant_recipe


class Command(BaseCommand):
    help = "Report the health of the durable_schedule store; non-zero exit when unhealthy."
    requires_system_checks: list = []  # a broken store must still be reportable

    def add_arguments(self, parser):
        out = parser.add_mutually_exclusive_group()
        out.add_argument("--json", action="store_true", help="print one JSON document")
        out.add_argument("--metrics", action="store_true",
                         help="print the Prometheus text exposition of the store gauges")
        parser.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT_SECONDS,
                            metavar="SECONDS",
                            help="the longest one read may wait for a lock or run before the "
                                 "store is reported as not answering (exit 2, DS426); 0: no "
                                 f"bound (default {DEFAULT_TIMEOUT_SECONDS:g})")
        parser.add_argument("--roles", action="store_true",
                            help="print the role and grant recipe for a DBA")

    def handle(self, *args, **options):
        try:  # DS440 before anything is read or printed
            options["timeout"] = check_timeout(options["timeout"])
            if options["roles"] and (options["json"] or options["metrics"]):
                # SQL text in front of the document: no JSON or Prometheus parser reads it
                raise InvalidArgument("--roles prints SQL text and cannot be combined with "
                                      "--json or --metrics (one machine-readable document); "
                                      "run durable_status --roles on its own")
        except DurableError as exc:
            raise CommandError(str(exc)) from exc
        if options["roles"]:
            self.stdout.write(grant_recipe(_migration_owner()))
        if options["metrics"]:
            self._metrics(options["timeout"])
            return
        try:
            report = collect(timeout=options["timeout"])
        except (DatabaseError, TimeZoneSupportOff) as exc:  # unreachable, dropped while
            # reading, or USE_TZ off (DS450): one report (JSON too), exit 2, never a traceback
            report = unreachable(exc)
        if options["json"]:
            self.stdout.write(json.dumps(report.to_json(), indent=2, sort_keys=True))
        else:
            self._print(report)
        if report.healthy:
            return
        sys.exit(2 if report.store_broken else 1)

    def _metrics(self, timeout: float) -> None:
        from durable_schedule.observability import metrics
        from durable_schedule.operations.gauges import read_gauges

        try:
            body, _ = metrics.exposition(include_store=True, timeout=timeout)
        except DurableError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(body.decode(), ending="")
        if not read_gauges(timeout=timeout).up:
            sys.exit(2)

    def _print(self, r) -> None:
        w = self.stdout.write
        if not r.reachable:
            w(self.style.ERROR(f"problem: {r.problems[0]}"))
            return
        w(f"schema       {r.schema_version} (code {r.code_schema_version}, requires "
          f">= {r.required_schema}; store floor {r.compatibility_floor})")
        w(f"runtime epoch {r.runtime_epoch}")
        w(f"roles        {_roles_line(r)}")
        w(f"scopes       {r.scopes}")
        for name, q in (("schedules", r.schedules), ("work", r.work)):
            late = f"{q.oldest_lateness_seconds:.1f}s" if q.oldest_lateness_seconds else "-"
            w(f"{name:<12} due {q.due}, oldest lateness {late}, expired leases "
              f"{q.expired_leases}")
        w("work states  " + (", ".join(f"{k} {v}" for k, v in sorted(r.work_by_state.items()))
                             or "-"))
        w("last hour    " + (", ".join(f"{k} {v}"
                                       for k, v in sorted(r.finished_last_hour.items())) or "-"))
        for runner in r.runners:
            w(f"runner       {runner.kind} {runner.state} {runner.lease_owner} (host "
              f"{runner.host}, pid {runner.pid}, v{runner.version}, {runner.passes} passes, "
              f"last beat {runner.silent_seconds:.0f}s ago)")
        if not r.runners:
            w("runner       none registered")
        w(f"partitions   {', '.join(r.partitions) or '-'}")
        for row in r.tz_rules:
            w(f"tz rules     {row['tz']} {row['fingerprint'][:16]}: {row['schedules']} cron "
              f"schedules, {row['mismatched']} mismatched")
        for s in r.suspended_schedules:
            w(f"suspended    {s.scope_id}/{s.schedule_id}: {s.describe()} (since {s.suspended_at})")
        w(f"paused       {r.paused_schedules} schedule{'s' if r.paused_schedules != 1 else ''}")
        w("missed       " + (", ".join(f"{k} {v}" for k, v in sorted(r.missed_instants.items()))
                             or "-"))
        w(f"buffered     {r.buffered_instants} instant{'s' if r.buffered_instants != 1 else ''}"
          " (buffer_all)")
        for warning in r.warnings:
            w(self.style.WARNING(f"warning: {warning}"))
        if r.healthy:
            w(self.style.SUCCESS("healthy"))
        else:
            for p in r.problems:
                w(self.style.ERROR(f"problem: {p}"))


def _migration_owner() -> str | None:
    """The database user of the store's alias: the one the recipe's membership line names
    (None when DATABASES leaves it to libpq's default)."""
    from django.db import connections

    from durable_schedule import conf

    return connections[conf.database_alias()].settings_dict.get("USER") or None


def _roles_line(r) -> str:
    """The roles are compared with the contract only on a migrated store at a schema this code
    reads: before that, saying "ok" would vouch for roles nobody checked (even missing ones)."""
    if not r.migrated:
        return "not checked: the store is not migrated"
    if (r.schema_version or 0) < r.required_schema:
        return "not checked: the schema is below the one this code requires"
    return "ok" if not r.role_problems else "; ".join(r.role_problems)
