"""``manage.py demo_story``: what `make demo` shows after migrating.

It uses the public API only, and moves the database clock seam (durable_schedule.testing's
ControlledClock, as the owner) so that a day of schedule time passes in a second; the clock is
restored at the end. Run it on a scratch database: it resets the demo scope's clock.

The story is a list of chapters (CHAPTERS at the bottom), each a method ``chapter_<name>`` that
prints what it shows. To extend the demo, write a chapter and add its name to CHAPTERS.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import transaction

from demo.models import Effect, Order
from demo.work import send_invoice, touch
from durable_schedule import schedules, work
from durable_schedule.processor import process_due
from durable_schedule.testing import ControlledClock

SCOPE = "demo-tenant"
START = datetime(2030, 1, 1, 9, 0, tzinfo=UTC)


class Command(BaseCommand):
    help = "Create a few schedules and Work, run bounded passes, print what happened."

    def handle(self, *args, **options):
        self.clock = ControlledClock()
        try:
            for name in CHAPTERS:
                getattr(self, f"chapter_{name}")()
        finally:
            self.clock.restore()
            self.say("database clock restored to PostgreSQL's own")

    # ---------------------------------------------------------------- helpers
    def say(self, text: str) -> None:
        self.stdout.write(text)

    def work_pass(self) -> None:
        """One bounded worker pass; prints the counts that are not zero."""
        done = work.process_work_pass(max_items=100, lease_owner="demo-worker", heartbeat=False)
        self.say("  worker: " + (" ".join(f"{k}={v}" for k, v in done.as_dict().items() if v)
                                 or "nothing due"))

    def work_line(self, work_id) -> str:
        info = work.get(SCOPE, work_id)
        return f"Work {str(work_id)[:8]} {info.state}"

    # ---------------------------------------------------------------- chapters
    def chapter_clock(self) -> None:
        self.clock.set(START)
        call_command("durable_partitions", stdout=self.stdout)
        self.say(f"\n-- the demo runs on a controlled database clock, set to {START:%Y-%m-%d %H:%M}"
                 " UTC and moved forward by the demo itself (that is why the dates are in 2030):"
                 " a day of schedule time passes in a second, nothing waits for real time")

    def chapter_transactional_work(self) -> None:
        self.say("\n-- Work is accepted only if the caller's transaction commits")
        with transaction.atomic():
            order = Order.objects.create(number=42)
            accepted = send_invoice.enqueue(scope=SCOPE, command=f"order-{order.number}",
                                            idempotency_key="invoice-42",
                                            payload={"order": order.number})
        self.say(f"order 42 saved and invoice {self.work_line(accepted.work_id)}")
        try:
            with transaction.atomic():
                Order.objects.create(number=43)
                send_invoice.enqueue(scope=SCOPE, command="order-43",
                                     idempotency_key="invoice-43", payload={"order": 43})
                raise RuntimeError("the caller changed its mind")
        except RuntimeError:
            pass
        self.say(f"order 43 rolled back: orders {sorted(o.number for o in Order.objects.all())}"
                 f", invoice Work in scope: {len(work.list(SCOPE))}")
        again = send_invoice.enqueue(scope=SCOPE, command="order-42",
                                     idempotency_key="invoice-42", payload={"order": 42})
        self.say(f"enqueue again with the same identity returns the original Work: "
                 f"{again.work_id == accepted.work_id}")

    def chapter_schedules(self) -> None:
        self.say("\n-- three schedules (At, After, Every), each targeting Work")
        target = touch.target(payload={})
        schedules.create(SCOPE, "report-once", schedules.At(START + timedelta(hours=2)), target)
        schedules.create(SCOPE, "reminder", schedules.After(timedelta(minutes=30)), target)
        schedules.create(SCOPE, "hourly-sync", schedules.Every(timedelta(hours=1)), target)
        for info in schedules.list(SCOPE):
            self.say(f"  {info.schedule_id:<12} {info.kind:<6} next {info.next_nominal_utc:%H:%M}")
        self.say("  (each line below: schedule, occurrence kind -> the Work it accepted, in the "
                 "state the worker pass left it)")
        for hours in (1, 2, 3):
            now = self.clock.set(START + timedelta(hours=hours))
            counts = process_due(max_schedules=100, lease_owner="demo")
            self.say(f"\n-- {now:%H:%M} bounded pass: " + " ".join(
                f"{k}={v}" for k, v in counts.as_dict().items() if v))
            self.work_pass()
            for o in counts.outcomes:
                done = ", schedule completed" if o.completed else ""
                self.say(f"  {o.schedule_id:<12} {o.action}{done}"
                         + (f" -> {self.work_line(o.work_id)}" if o.work_id else ""))

    def chapter_failure_and_retry(self) -> None:
        self.say("\n-- a failing attempt is retried on the attempt plan's next slot")
        accepted = send_invoice.enqueue(scope=SCOPE, command="order-44",
                                        idempotency_key="invoice-44",
                                        payload={"order": 44, "fail_attempts": 1})
        self.work_pass()
        info = work.get(SCOPE, accepted.work_id)
        error = (info.last_error or {}).get("message", info.last_error)
        self.say(f"  attempt {info.attempt} failed ({error}) -> {self.work_line(info.work_id)}, "
                 f"next attempt due {info.due_at:%H:%M}")
        self.clock.set(info.due_at)
        self.say(f"  the clock reaches {info.due_at:%H:%M}")
        self.work_pass()
        info = work.get(SCOPE, accepted.work_id)
        self.say(f"  attempt {info.attempt} -> {self.work_line(info.work_id)}, "
                 f"result {info.result}")

    def chapter_clock_jump(self) -> None:
        self.say("\n-- a clock jump beyond the safety window suspends instead of guessing")
        self.clock.set(START + timedelta(days=2))
        counts = process_due(max_schedules=100, lease_owner="demo")
        for o in counts.outcomes:
            self.say(f"  {o.schedule_id:<12} {o.action} reason={o.reason}")

    def chapter_summary(self) -> None:
        self.say("\n-- where everything ended")
        for info in schedules.list(SCOPE):
            self.say(f"  schedule {info.schedule_id:<12} {info.state:<9} revision {info.revision}")
        states: dict[str, int] = {}
        for w in work.list(SCOPE, page_size=100):
            states[w.state] = states.get(w.state, 0) + 1
        self.say(f"  Work by state: {states}; effects performed: {Effect.objects.count()}")


CHAPTERS = (
    "clock",
    "transactional_work",
    "schedules",
    "failure_and_retry",
    "clock_jump",
    "summary",
)
