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
