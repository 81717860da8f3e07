"""Settings of durable_schedule: one function per setting, one documented default each
(docs/protocol/conventions.md rule C8).

All live under ``settings.DURABLE_SCHEDULE`` (a dict). ``validate()`` runs as a system check.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

DEFAULTS: dict[str, Any] = {
    # The Django database alias whose connection holds the store.
    "DATABASE": "default",
    # Lease a schedule dispatcher or Work worker takes per claim (<= 10 minutes,
    # docs/protocol/storage.md).
    "LEASE_SECONDS": 30,
    # How late the earliest missed instant may be before a schedule is suspended
    # (docs/protocol/schedules.md rule S3).
    "SAFETY_WINDOW": timedelta(hours=1),
    # Longest sleep of an idle --loop runner between database polls (NOTIFY wakes it sooner).
    "MAX_IDLE_SECONDS": 5.0,
    # Which scopes a Django admin user may see (docs/admin.md "Scopes in the admin"): a callable
    # ``user -> list of scope ids, or durable_schedule.admin.scoping.ALL``, or its dotted path.
    # The default shows every scope to active superusers and no scope to other staff (fail
    # closed, like row-level security); single-tenant projects may name
    # "durable_schedule.admin.scoping.all_scopes_for_staff".
    "ADMIN_SCOPES": "durable_schedule.admin.scoping.superusers_see_all",
    # Run the runtime's own SQL as server-side prepared statements (psycopg ``prepare=True`` on
    # the Django connection, whatever DATABASES' OPTIONS say). Turn off behind a pooler in
    # transaction mode that cannot keep prepared statements (PgBouncer < 1.21, or without
    # ``max_prepared_statements``): docs/operations.md "Prepared statements and poolers".
    # None (auto): prepare unless the alias declares a transaction pooler
    # (DISABLE_SERVER_SIDE_CURSORS, or PgBouncer's port 6432); True/False force it.
    "PREPARE_STATEMENTS": None,
    # The Work queue names enqueue accepts (docs/work.md "Queues and priorities"); None accepts
    # any name. A worker serves every queue unless `process_work --queue` names some.
    "QUEUES": None,
    # How long a --loop runner waits for the database to come back after a connection loss
    # (failover, pooler restart) before it exits with DS405: docs/operations.md "Failover and
    # database outages".
    "OUTAGE_TOLERANCE_SECONDS": 300.0,
    # Claimed schedules of one scope processed in one transaction by a schedule pass
    # (docs/operations.md "Batched schedule passes"); 1 turns batching off (one transaction
    # per schedule). At most 1000, the claim's own bound.
    "SCHEDULE_BATCH": 100,
    # Health (docs/operations.md "Health: heartbeats and thresholds"). A --loop runner writes
    # its heartbeat every HEARTBEAT_SECONDS; one silent for RUNNER_DEAD_SECONDS is dead.
    "HEARTBEAT_SECONDS": 10.0,
    "RUNNER_DEAD_SECONDS": 60.0,
    # durable_status flags a queue whose oldest due row is this late, or this many rows due.
    "LATENESS_ALERT_SECONDS": 300.0,
    "BACKLOG_ALERT": 10_000,
    # A --loop runner serves its process metrics (counters, histograms) on this TCP port when
    # set (prometheus-client's exposition server; docs/operations.md "Metrics").
    "METRICS_PORT": None,
    # Bearer token the metrics view accepts (besides a staff login); None: staff only.
    "METRICS_TOKEN": None,
    # The scope every public call uses when it is given none (docs/getting-started.md "One scope
    # for a single-tenant project"). None (the default) makes the scope a required argument, as
    # a multi-tenant project wants: a forgotten scope is an error (DS410), never a guess.
    "DEFAULT_SCOPE": None,
    # Import every installed app's ``work`` module in AppConfig.ready (docs/work.md "Where
    # definitions live"), so any process -- a web worker serving the admin, a shell -- can resolve
    # the stored targets its schedules name. False leaves registration to the project.
    "AUTODISCOVER": True,
}


class InvalidSettings(ImproperlyConfigured, ValueError):
    """A DURABLE_SCHEDULE setting in a shape no reader can use. A ValueError, as every finding
    of :func:`validate` (the settings check reports it as E005); an ImproperlyConfigured where
    a process that never ran the checks (a WSGI worker) reads the setting."""


def _settings() -> Mapping[str, Any]:
    value = getattr(settings, "DURABLE_SCHEDULE", {})
    if type(value) is not dict and not isinstance(value, Mapping):  # a plain dict: no ABC check
        # Every reader below would raise AttributeError ('list' object has no attribute
        # 'get'), from AppConfig.ready() and from each system check.
        raise InvalidSettings("DURABLE_SCHEDULE must be a dict of settings "
                              f"(docs/api.md \"Settings\"), not {type(value).__name__}")
    return value


def _get(name: str) -> Any:
    return _settings().get(name, DEFAULTS[name])


def database_alias() -> str:
    """The store's alias: a string naming an alias of DATABASES. Anything else is refused here,
    naming the setting, instead of Django's ConnectionDoesNotExist (or a TypeError for a list)
    from the first ``connections[...]``."""
    alias = _get("DATABASE")
    if type(alias) is not str or alias not in settings.DATABASES:
        raise InvalidSettings(f"DURABLE_SCHEDULE['DATABASE']={alias!r} is not an alias of "
                              "DATABASES"[:200])
    return alias


# The integer settings and their accepted ranges (inclusive). A bool is refused (True is not
# "1 second"), and so is a float with a fraction: int() truncated 2.9 to 2 and turned NaN or a
# string into a raw ValueError text. A float with an integral value (30.0) is taken exactly.
INTEGER_RANGES: dict[str, tuple[int, int | None]] = {
    "LEASE_SECONDS": (1, 600),
    "SCHEDULE_BATCH": (1, 1000),
    "BACKLOG_ALERT": (1, None),
    "METRICS_PORT": (1, 65535),
}


def _integer(name: str) -> int:
    """The integer setting ``name``, or ValueError naming it and its accepted range."""
    value = _get(name)
    low, high = INTEGER_RANGES[name]
    integral = (not isinstance(value, bool) and (
        isinstance(value, int) or (isinstance(value, float) and value.is_integer())))
    if not integral or not low <= value <= (value if high is None else high):
        accepted = f"from {low} to {high}" if high is not None else f">= {low}"
        raise ValueError(f"DURABLE_SCHEDULE['{name}'] must be an integer {accepted}, "
                         f"not {value!r}"[:200])
    return int(value)


def lease_seconds() -> int:
    return _integer("LEASE_SECONDS")


def safety_window() -> timedelta:
    return _get("SAFETY_WINDOW")


def max_idle_seconds() -> float:
    return float(_get("MAX_IDLE_SECONDS"))


PGBOUNCER_PORT = "6432"


def declares_transaction_pooler(alias: str | None = None) -> bool:
    """The alias's settings declare a transaction-mode pooler: Django's documented
    ``DISABLE_SERVER_SIDE_CURSORS`` for transaction pooling, or PgBouncer's port 6432."""
    db = settings.DATABASES.get(alias or database_alias(), {})
    return bool(db.get("DISABLE_SERVER_SIDE_CURSORS")) or str(db.get("PORT")) == PGBOUNCER_PORT


def prepare_statements(alias: str | None = None) -> bool:
    """Whether the runtime prepares its statements on ``alias`` (None: the store's alias): the
    explicit setting, or with None (the default) unless that alias declares a transaction
    pooler. Per alias: a call with ``using=`` an alias that goes through PgBouncer must not
    prepare because the store's own alias connects directly. Anything but True, False or None
    is refused here too: ``bool("False")`` is True, and a process that never ran the settings
    check would prepare behind the very pooler the setting was meant to turn it off for."""
    value = _get("PREPARE_STATEMENTS")
    if value is None:
        return not declares_transaction_pooler(alias)
    if not isinstance(value, bool):
        raise InvalidSettings(_PREPARE_STATEMENTS_RULE + f", not {value!r}"[:80])
    return value


_PREPARE_STATEMENTS_RULE = ("DURABLE_SCHEDULE['PREPARE_STATEMENTS'] must be True, False or None "
                            "(None: prepare unless the database alias declares a transaction "
                            "pooler)")

#: The collections QUEUES may be: a str is a sequence of one-letter names, a dict's values
#: would be ignored, and bytes are no names at all.
_QUEUE_COLLECTIONS = (list, tuple, set, frozenset)


def queues() -> frozenset[str] | None:
    value = _get("QUEUES")
    if value is None:
        return None
    if not isinstance(value, _QUEUE_COLLECTIONS):
        raise InvalidSettings(_QUEUES_RULE + f", not {type(value).__name__}")
    try:
        return frozenset(value)
    except TypeError:  # an unhashable member (a list in the list)
        raise InvalidSettings(_QUEUES_RULE + f", not {value!r}"[:200]) from None


_QUEUES_RULE = ("DURABLE_SCHEDULE['QUEUES'] must be None or a non-empty list of queue names "
                "(1-200 characters, no surrounding spaces, no control, format or separator "
                "characters: the names enqueue accepts)")


def outage_tolerance_seconds() -> float:
    return float(_get("OUTAGE_TOLERANCE_SECONDS"))


def schedule_batch() -> int:
    return _integer("SCHEDULE_BATCH")


def heartbeat_seconds() -> float:
    return float(_get("HEARTBEAT_SECONDS"))


def runner_dead_seconds() -> float:
    return float(_get("RUNNER_DEAD_SECONDS"))


def lateness_alert_seconds() -> float:
    return float(_get("LATENESS_ALERT_SECONDS"))


def backlog_alert() -> int:
    return _integer("BACKLOG_ALERT")


def metrics_port() -> int | None:
    return None if _get("METRICS_PORT") is None else _integer("METRICS_PORT")


#: The shortest METRICS_TOKEN (docs/operations.md "Metrics").
MIN_METRICS_TOKEN = 16


def metrics_token() -> str | None:
    """The metrics view's bearer token; None when unset *or when it breaks the rule* (a string
    of at least MIN_METRICS_TOKEN characters). The settings check refuses such a value (E005),
    but a process that never ran the checks (a WSGI worker) must not accept a guessable
    token: it then serves staff only, as without a token."""
    value = _get("METRICS_TOKEN")
    if not isinstance(value, str) or len(value) < MIN_METRICS_TOKEN:
        return None
    return value


def autodiscover() -> bool:
    """Whether AppConfig.ready imports every app's work module. Checked here, not only by the
    settings check: ready() runs in processes where system checks never do (a WSGI worker, a
    shell), and a non-bool such as "false" must not silently turn the import off."""
    value = _get("AUTODISCOVER")
    if not isinstance(value, bool):
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured("DURABLE_SCHEDULE['AUTODISCOVER'] must be True or False, "
                                   f"not {value!r}"[:200])
    return value


def default_scope() -> str | None:
    return _get("DEFAULT_SCOPE")


def validated_default_scope() -> str | None:
    """DEFAULT_SCOPE where a call uses it: None, or a scope id; anything else is DS411
    (InvalidDefaultScope) naming the setting, in a process that never ran the settings check
    too, instead of a DS301 that names no setting (or, for ``""``, no scope at all)."""
    value = default_scope()
    _validate_default_scope(value)
    return value


def admin_scopes():
    """The ADMIN_SCOPES callable, imported when given as a dotted path."""
    value = _get("ADMIN_SCOPES")
    if isinstance(value, str):
        from django.utils.module_loading import import_string

        value = import_string(value)
    return value


def validate() -> None:
    """Raise ValueError naming the first invalid setting."""
    unknown = set(_settings()) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown DURABLE_SCHEDULE settings: {sorted(unknown, key=repr)}")
    database_alias()
    lease_seconds()
    window = safety_window()
    if not isinstance(window, timedelta) or window <= timedelta(0):
        raise ValueError("DURABLE_SCHEDULE['SAFETY_WINDOW'] must be a positive timedelta")
    prepare_statements()
    for flag in ("AUTODISCOVER",):
        if not isinstance(_get(flag), bool):
            raise ValueError(f"DURABLE_SCHEDULE['{flag}'] must be True or False")
    schedule_batch()
    _validate_default_scope(default_scope())
    _validate_queues(queues())
    # NaN passes every "<= 0" and "< 0" test and then compares false with everything: as the
    # idle cap the loop ran passes back to back, as the tolerance it probed without pausing.
    _positive_number("MAX_IDLE_SECONDS")
    tolerance = _get("OUTAGE_TOLERANCE_SECONDS")
    if (isinstance(tolerance, bool) or not isinstance(tolerance, int | float)
            or not tolerance >= 0):
        raise ValueError("DURABLE_SCHEDULE['OUTAGE_TOLERANCE_SECONDS'] must be a number of "
                         "seconds >= 0 (0: exit at the first outage)")
    _validate_health()
    try:
        scopes = admin_scopes()
    except ImportError as exc:
        raise ValueError(f"DURABLE_SCHEDULE['ADMIN_SCOPES'] cannot be imported: {exc}") from None
    if not callable(scopes):
        raise ValueError("DURABLE_SCHEDULE['ADMIN_SCOPES'] must be a callable user -> scopes "
                         "or its dotted path")


def _validate_queues(listed: frozenset | None) -> None:
    """Each name one that enqueue accepts (work/enqueue.py ``identifier``): a name it refuses
    passed the check and then refused every enqueue naming it (DS115)."""
    if listed is None:
        return
    from durable_schedule.errors import InvalidIdentifier
    from durable_schedule.work.enqueue import identifier

    if not listed:
        raise ValueError(_QUEUES_RULE + ", not an empty collection")
    for name in listed:
        try:
            identifier(name, "queue")
        except InvalidIdentifier:
            raise ValueError(_QUEUES_RULE + f": {name!r}"[:120]) from None


def _positive_number(name: str, *, finite: bool = False) -> None:
    value = _get(name)
    if (isinstance(value, bool) or not isinstance(value, int | float) or not value > 0
            or (finite and not math.isfinite(value))):
        kind = "a finite positive number" if finite else "a positive number"
        raise ValueError(f"DURABLE_SCHEDULE['{name}'] must be {kind} of seconds, "
                         f"not {value!r}"[:200])


def _validate_health() -> None:
    # Finite: an infinite heartbeat interval never beats, and the thresholds are printed and
    # serialized by durable_status (JSON has no infinity).
    for name in ("HEARTBEAT_SECONDS", "RUNNER_DEAD_SECONDS", "LATENESS_ALERT_SECONDS"):
        _positive_number(name, finite=True)
    backlog_alert()
    if runner_dead_seconds() <= heartbeat_seconds():
        raise ValueError("DURABLE_SCHEDULE['RUNNER_DEAD_SECONDS'] must exceed HEARTBEAT_SECONDS "
                         "(a live runner would look dead between two beats)")
    token = _get("METRICS_TOKEN")
    if token is not None and (not isinstance(token, str) or len(token) < MIN_METRICS_TOKEN):
        raise ValueError("DURABLE_SCHEDULE['METRICS_TOKEN'] must be None or a string of at "
                         "least 16 characters")
    metrics_port()


def _validate_default_scope(value: object) -> None:
    if value is None:
        return
    from durable_schedule.errors import InvalidDefaultScope, InvalidScope
    from durable_schedule.store.transactions import validate_scope_id

    try:
        validate_scope_id(value)
    except InvalidScope as exc:
        raise InvalidDefaultScope(f"DURABLE_SCHEDULE['DEFAULT_SCOPE']={value!r} is not a valid "
                                  f"scope id: {exc.message}") from None
