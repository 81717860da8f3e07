"""durable_schedule: durable, auditable scheduling and Work execution for Django on PostgreSQL.

The public API lives in two modules: :mod:`durable_schedule.schedules` and
:mod:`durable_schedule.work`; errors in :mod:`durable_schedule.errors` (see docs/api.md).
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
