"""The Django admin of durable_schedule for operators (docs/architecture.md "admin", docs/admin.md).

Importing this package registers the ModelAdmins with ``django.contrib.admin.site`` (Django's
admin autodiscovery imports it). Areas, one module each:

* :mod:`.scoping`  — which scopes a user sees (``DURABLE_SCHEDULE['ADMIN_SCOPES']``) and the
  scoped read transaction that row-level security needs;
* :mod:`.base`     — the read-only, scoped ModelAdmin every page builds on;
* :mod:`.schedules`, :mod:`.work` — the pages;
* :mod:`.actions`  — suspend / release / delete / record proof, through the public API only;
* :mod:`.timeline` — what a schedule's and a Work's detail page shows;
* :mod:`.dashboard` — runners and health (the runners' page).
"""

from django.apps import apps

from durable_schedule.admin.scoping import ALL, all_scopes_for_staff, superusers_see_all

# The pages register only where Django's admin is installed: a project without it (an API or a
# worker image) still imports this package, through the ADMIN_SCOPES default the settings check
# resolves, and registering there failed with "No installed app with label 'admin'" in every
# command that runs the checks (process_work, migrate, check).
if apps.is_installed("django.contrib.admin"):
    from durable_schedule.admin import dashboard, schedules, work  # noqa: F401  (registers them)

__all__ = ["ALL", "all_scopes_for_staff", "superusers_see_all"]
