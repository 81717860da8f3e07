"""A project that lists ``"durable_schedule"`` in INSTALLED_APPS without ``"pgtrigger"`` (the
settings docs/getting-started.md shows name both) stopped with Django's
``TypeError: 'class Meta' got invalid attribute(s): triggers``, which says nothing about what
is missing. It now stops with DS451 (``PgtriggerNotInstalled``, an ImproperlyConfigured) naming
pgtrigger, before any model is loaded. Run in a fresh interpreter: the app registry of this
test process is already populated."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.docs.snippets import ROOT

SETUP = textwrap.dedent("""
    import django
    from django.conf import settings
    settings.configure(INSTALLED_APPS={apps!r}, USE_TZ=True,
                       DATABASES={{"default": {{"ENGINE": "django.db.backends.postgresql",
                                                "NAME": "unused"}}}})
    django.setup()
    print("set up")
""")


def _setup(apps: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SETUP.format(apps=apps)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_installed_apps__without_pgtrigger_is_ds451_naming_it():
    done = _setup(["django.contrib.contenttypes", "django.contrib.auth", "durable_schedule"])
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("durable_schedule.errors.PgtriggerNotInstalled: DS451: "), done.stderr
    assert '"pgtrigger"' in last and "class Meta" not in done.stderr


def test_installed_apps__with_pgtrigger_in_either_order_sets_up():
    for apps in (["pgtrigger", "durable_schedule"], ["durable_schedule", "pgtrigger"]):
        done = _setup(["django.contrib.contenttypes", "django.contrib.auth", *apps])
        assert done.returncode == 0 and "set up" in done.stdout, done.stderr


CHECKS = SETUP.replace('print("set up")', textwrap.dedent("""
    from django.core import checks
    from durable_schedule import conf
    conf.validate()
    print("checks", sorted(m.id for m in checks.run_checks() if m.id.startswith("durable")))
    """))


def test_installed_apps__a_project_without_the_admin_passes_the_settings_check():
    """The ADMIN_SCOPES default is a path into durable_schedule.admin, which the settings check
    imports: the package registered its pages with django.contrib.admin on import, so a project
    without the admin (an API or worker image) failed every command that runs the checks
    (process_work, migrate, check) with "No installed app with label 'admin'"."""
    done = subprocess.run([sys.executable, "-c", CHECKS.format(apps=["pgtrigger",
                                                                    "durable_schedule"])],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # The settings are valid (no E005); the store check only says whether it can read a store.
    assert "checks [" in done.stdout and "E005" not in done.stdout, done.stdout + done.stderr


def test_installed_apps__a_sqlite_database_is_ds452_before_the_store_is_read():
    """startproject's default database is SQLite: the check said only "cannot read the store:
    no such function: to_regclass" (a warning) and migrate stopped at "near '(': syntax
    error". The check now says what is wrong (an error, which also stops migrate before its
    first statement)."""
    script = textwrap.dedent("""
        import django
        from django.conf import settings
        settings.configure(INSTALLED_APPS=["pgtrigger", "durable_schedule"], USE_TZ=True,
                           DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3",
                                                  "NAME": ":memory:"}})
        django.setup()
        from django.core.management import call_command
        for skip in (False, True):  # manage.py migrate runs the checks; --skip-checks not
            try:
                call_command("migrate", verbosity=0, skip_checks=skip)
            except Exception as exc:
                print(type(exc).__name__, exc)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    checked, skipped = [line for line in done.stdout.splitlines() if "Error" in line[:20]]
    assert checked.startswith("SystemCheckError"), done.stdout
    assert "(durable_schedule.E452) DS452: DATABASES['default'] uses " in done.stdout, done.stdout
    assert skipped.startswith("CommandError DS452: DATABASES['default'] uses "), done.stdout
    assert "syntax error" not in done.stdout + done.stderr


def test_installed_apps__another_database_of_the_project_may_be_sqlite():
    """The store lives on DURABLE_SCHEDULE['DATABASE']; migrate's plan for any other database
    lists every app's migrations too, so the DS452 and roles checks before migrate look at the
    store's database only: migrating a project's second, SQLite database is not refused."""
    script = textwrap.dedent("""
        import django
        from django.conf import settings
        settings.configure(INSTALLED_APPS=["pgtrigger", "durable_schedule"], USE_TZ=True,
                           DATABASES={"default": {"ENGINE": "django.db.backends.postgresql",
                                                  "NAME": "unused", "HOST": "127.0.0.1",
                                                  "PORT": "1"},
                                      "local": {"ENGINE": "django.db.backends.sqlite3",
                                                "NAME": ":memory:"}},
                           DATABASE_ROUTERS=["router.Router"])
        django.setup()
        from django.core.management import call_command
        call_command("migrate", database="local", verbosity=0)
        print("migrated local")
    """)
    router = ("class Router:\n"
              "    def allow_migrate(self, db, app_label, **hints):\n"
              "        return db == 'default' if app_label == 'durable_schedule' else None\n")
    done = subprocess.run([sys.executable, "-c", f"import sys, types\n"
                           f"m = types.ModuleType('router'); exec({router!r}, m.__dict__)\n"
                           f"sys.modules['router'] = m\n" + script], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "migrated local" in done.stdout, done.stderr
