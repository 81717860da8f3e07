"""Provider safety modes and reconciliation verdicts (issue 3, item 5; docs/protocol/work.md).

``IDEMPOTENT``: the effect may be repeated, so an attempt whose outcome was never recorded (a
crash, a lost lease) is simply retried under the retry policy. ``RECONCILE_BEFORE_RETRY``: the
effect must not be repeated blindly; an admitted permit without a recorded outcome is first
handed to the definition's reconciler, which answers with one of three verdicts:

* ``Applied(result)`` -- the effect happened; the Work succeeds with ``result``.
* ``NotApplied()`` -- the effect did not happen; the permit is resolved and the attempt proceeds
  under the retry policy (without reopening a closed admission window).
* ``Unknown()`` -- the reconciler cannot tell; the Work is suspended for an operator, who records
  proof with :func:`durable_schedule.work.record_proof`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from durable_schedule.errors import InvalidArgument


class ProviderSafety(StrEnum):
    IDEMPOTENT = "idempotent"
    RECONCILE_BEFORE_RETRY = "reconcile_before_retry"


#: The members by their string value: a request names its definition's safety as that plain
#: string, and a dictionary lookup answers it without the Enum call's machinery (the member is
#: the one ``ProviderSafety(value)`` returns).
_BY_VALUE = {member.value: member for member in ProviderSafety}


def provider_safety(value: object) -> ProviderSafety:
    """``value`` (a ProviderSafety or its string value) as a ProviderSafety; else DS406."""
    if type(value) is str:
        member = _BY_VALUE.get(value)
        if member is not None:
            return member
    try:
        return ProviderSafety(value)
    except ValueError:
        raise InvalidArgument(
            "provider safety must be 'idempotent' or 'reconcile_before_retry'", got=value
        ) from None


@dataclass(frozen=True)
class Applied:
    """Reconciler verdict: the effect happened; ``result`` becomes the Work's result."""

    result: Any = None


@dataclass(frozen=True)
class NotApplied:
    """Reconciler verdict: the effect did not happen."""


@dataclass(frozen=True)
class Unknown:
    """Reconciler verdict: the effect cannot be established; the Work is suspended."""

    reason: str = ""


Verdict = Applied | NotApplied | Unknown


def verdict(value: object) -> Verdict | None:
    """A reconciler's return value as a verdict; the bare classes (all three) are accepted as
    their instances without arguments: ``Applied`` as ``Applied()``, a success without result.
    None when the value is no verdict at all (the runtime then treats it as Unknown)."""
    if value is Applied:
        return Applied()
    if value is NotApplied:
        return NotApplied()
    if value is Unknown:
        return Unknown()
    if isinstance(value, Applied | NotApplied | Unknown):
        return value
    return None
