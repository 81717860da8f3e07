"""Settings of durable_schedule: one function per setting, one documented default each (STYLE 8).

All live under ``settings.DURABLE_SCHEDULE`` (a dict). ``validate()`` runs as a system check.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings

DEFAULTS: dict[str, Any] = {
    # The Django database alias whose connection holds the store.
    "DATABASE": "default",
    # Lease a schedule dispatcher or Work worker takes per claim (<= 10 minutes, DESIGN §3).
    "LEASE_SECONDS": 30,
    # How late the earliest missed instant may be before a schedule is suspended (DESIGN §4.3).
    "SAFETY_WINDOW": timedelta(hours=1),
    # Longest sleep of an idle --loop runner between database polls (NOTIFY wakes it sooner).
    "MAX_IDLE_SECONDS": 5.0,
}


def _get(name: str) -> Any:
    return getattr(settings, "DURABLE_SCHEDULE", {}).get(name, DEFAULTS[name])


def database_alias() -> str:
    return _get("DATABASE")


def lease_seconds() -> int:
    return int(_get("LEASE_SECONDS"))


def safety_window() -> timedelta:
    return _get("SAFETY_WINDOW")


def max_idle_seconds() -> float:
    return float(_get("MAX_IDLE_SECONDS"))


def validate() -> None:
    """Raise ValueError naming the first invalid setting."""
    unknown = set(getattr(settings, "DURABLE_SCHEDULE", {})) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown DURABLE_SCHEDULE settings: {sorted(unknown)}")
    if database_alias() not in settings.DATABASES:
        raise ValueError(f"DURABLE_SCHEDULE['DATABASE']={database_alias()!r} is not in DATABASES")
    if not 0 < lease_seconds() <= 600:
        raise ValueError("DURABLE_SCHEDULE['LEASE_SECONDS'] must be between 1 and 600")
    window = safety_window()
    if not isinstance(window, timedelta) or window <= timedelta(0):
        raise ValueError("DURABLE_SCHEDULE['SAFETY_WINDOW'] must be a positive timedelta")
    if max_idle_seconds() <= 0:
        raise ValueError("DURABLE_SCHEDULE['MAX_IDLE_SECONDS'] must be positive")
