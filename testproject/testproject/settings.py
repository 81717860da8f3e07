"""Settings of the test project: a small Django project that installs durable_schedule as a user
would.

The database comes from DATABASE_URL (postgresql://user:password@host:port/name), else the local
server at 127.0.0.1:5432 as user postgres.
"""

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

BASE_DIR = Path(__file__).resolve().parent.parent


def _database_from_url(url: str) -> dict:
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise ValueError(f"DATABASE_URL must be a postgresql:// URL, got {parts.scheme!r}")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parts.path.lstrip("/")) or "durable_schedule",
        "USER": unquote(parts.username or "postgres"),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "127.0.0.1",
        "PORT": str(parts.port or 5432),
        # One test database per test process, so concurrent runs on one server (several
        # developers, tox envs, a benchmark) never drop each other's database.
        "TEST": {"NAME": os.environ.get("DURABLE_TEST_DB_NAME") or f"test_durable_{os.getpid()}"},
    }


SECRET_KEY = "testproject-not-secret"
DEBUG = os.environ.get("DJANGO_DEBUG", "") == "1"
ALLOWED_HOSTS = ["*"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "pgtrigger",
    "durable_schedule",
    "demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

ROOT_URLCONF = "testproject.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

DATABASES = {
    "default": _database_from_url(
        # Empty counts as unset (tox.ini's matrix substitution yields "" when nothing is set).
        os.environ.get("DATABASE_URL") or "postgresql://postgres@127.0.0.1:5432/durable_schedule"
    )
}
# A second alias on the same server, as a project with another database would have: the tasks
# tests show that a transaction on it does not include a task (docs/tasks.md "Transactions").
DATABASES["other"] = {**DATABASES["default"], "TEST": {"MIRROR": "default"}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
STATIC_URL = "static/"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"durable_schedule": {"handlers": ["console"], "level": "INFO"}},
}

# Django's Tasks framework on the durable backend (docs/tasks.md). On Django 5.2 the framework is
# the django-tasks backport (the "tasks" extra); Django 6 ships it.
TASKS = {
    "default": {
        "BACKEND": "durable_schedule.tasks.DurableBackend",
        "QUEUES": ["default", "emails"],
        "OPTIONS": {"SCOPE": "demo"},
    }
}
try:
    import django.tasks  # noqa: F401
except ImportError:  # Django 5.2: the backport, from the test extra
    INSTALLED_APPS.append("django_tasks")

DURABLE_SCHEDULE = {
    # Tests of the --loop runners raise this to prove a wake-up came from NOTIFY, not the timer.
    "MAX_IDLE_SECONDS": float(os.environ.get("DURABLE_MAX_IDLE_SECONDS", "5")),
    # The failover tests shorten it to see a runner give up; the pooler tests turn preparing off.
    "OUTAGE_TOLERANCE_SECONDS": float(os.environ.get("DURABLE_OUTAGE_TOLERANCE_SECONDS", "300")),
    # "1"/"0" force it on/off; unset leaves the default (None: prepare unless the alias
    # declares a transaction pooler).
    "PREPARE_STATEMENTS": {"1": True, "0": False}.get(
        os.environ.get("DURABLE_PREPARE_STATEMENTS", "")),
    # Tests of the runner heartbeat lower this to see the background thread beat.
    "HEARTBEAT_SECONDS": float(os.environ.get("DURABLE_HEARTBEAT_SECONDS", "10")),
    # The autodiscovery tests turn Work autodiscovery off to see what a process lacks without it.
    "AUTODISCOVER": os.environ.get("DURABLE_AUTODISCOVER", "1") != "0",
}
# The metrics-port tests give a --loop runner a port to serve its process metrics on.
if os.environ.get("DURABLE_METRICS_PORT"):
    DURABLE_SCHEDULE["METRICS_PORT"] = int(os.environ["DURABLE_METRICS_PORT"])
# The held-schedule runner tests narrow the Work queues to see a schedule held by DS244.
if os.environ.get("DURABLE_QUEUES"):
    DURABLE_SCHEDULE["QUEUES"] = os.environ["DURABLE_QUEUES"].split(",")
# The autodiscovery tests install an extra app (a broken work.py) to see the startup error.
INSTALLED_APPS += [app for app in os.environ.get("DURABLE_EXTRA_APPS", "").split(",") if app]
