"""durable_schedule: durable, auditable scheduling and Work execution for Django on PostgreSQL.

The public API lives in two modules: :mod:`durable_schedule.schedules` and
:mod:`durable_schedule.work`; errors in :mod:`durable_schedule.errors` (see docs/api.md).
"""

# The one place the version is written: pyproject.toml reads it (setuptools' dynamic version),
# CHANGELOG.md names it, and docs/compatibility.md says what a change of each part promises.
__version__ = "0.2.0.dev0"
__all__ = ["__version__"]
