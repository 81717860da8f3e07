"""``manage.py demo_cron``: one cron schedule in a time zone, across a DST change (`make demo`).

"30 2 * * *" in Europe/Berlin: 02:30 does not exist on 31 March 2030, so that run happens at
03:00 CEST, and the history keeps the wall time it was for. Moves the database clock seam like
demo_story and restores it at the end; run it on a scratch database.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.core.management import call_command
from django.core.management.base import BaseCommand

from demo.work import touch
from durable_schedule import schedules
from durable_schedule.evaluation.cron import explain
from durable_schedule.processor import process_due
from durable_schedule.testing import ControlledClock

SCOPE = "demo-tenant"
START = datetime(2030, 3, 30, 12, 0, tzinfo=UTC)


class Command(BaseCommand):
    help = "Create a cron schedule in Europe/Berlin and run it across the spring DST change."

    def handle(self, *args, **options):
        clock = ControlledClock()
        try:
            self.story(clock)
        finally:
            clock.restore()
            self.stdout.write("database clock restored to PostgreSQL's own")

    def story(self, clock: ControlledClock) -> None:
        say = self.stdout.write
        clock.set(START)
        spec = schedules.Cron("30 2 * * *", "Europe/Berlin")
        info = schedules.create(SCOPE, "nightly-berlin", spec, touch.target(payload={}))
        say(f"-- cron schedule {info.schedule_id!r}: {explain(spec.pattern, spec.tz)}")
        say("   next instants (UTC):")
        for instant in schedules.next_instants(spec, START, 3):
            say(f"   {instant:%Y-%m-%d %H:%M} UTC")
        now = clock.set(datetime(2030, 3, 31, 1, 0, 1, tzinfo=UTC))
        counts = process_due(max_schedules=100, lease_owner="demo")
        say(f"-- {now:%Y-%m-%d %H:%M:%S} UTC pass: materialized={counts.materialized}")
        for o in counts.outcomes:
            local = o.detail.get("local", {}).get("first")
            if local:
                say(f"   {o.schedule_id}: ran at {o.first:%H:%M} UTC for local wall time "
                    f"{local['wall']} (shifted={local['shifted']}: the DST gap)")
        say("-- durable_tz_rules (dry run): the rules each cron generation was accepted with")
        try:
            call_command("durable_tz_rules", stdout=self.stdout)
        except SystemExit as exc:  # 1 would mean affected schedules; the demo has none
            say(f"   exit {exc.code}")
