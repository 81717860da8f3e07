"""The schedule processor (docs/architecture.md "dispatcher" and "processor";
docs/protocol/schedules.md).

``process_due()`` is one bounded pass: trusted dispatcher claims (``dispatcher``), then one
scoped runtime transaction per batch of claimed schedules of one scope (``batch``, Work bridged
by ``batch_work``), or per schedule (``step``, Work bridged by ``bridge``); both decide through
``evaluate``. ``manage.py process_schedules`` runs it from cron, a systemd timer or a k8s
CronJob.
"""

from durable_schedule.processor.processor import PassCounts, process_due, process_due_once
from durable_schedule.processor.step import ScheduleOutcome

__all__ = ["PassCounts", "ScheduleOutcome", "process_due", "process_due_once"]
