"""``schedules.next_instants``: a pure preview of any spec's next nominal instants (docs/api.md).

No database and no clock: the caller says after which instant to look. What a preview cannot
know is stated instead of guessed:

* ``Cron`` with ``H``: the jitter comes from the schedule identity, so ``identity=(scope,
  schedule_id)`` is required (DS128); with it the preview shows exactly the instants the
  schedule will have (the seed is the one ``create`` persists).
* ``After(delay)`` and ``Every`` without an anchor are relative to the acceptance instant of a
  command that has not happened yet; the preview takes ``after`` as that instant (what a
  ``create`` at ``after`` would schedule). ``Every`` without an anchor still requires
  ``identity`` so the caller says which schedule the grid is for (DS128 otherwise).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from durable_schedule.errors import CronIdentityRequired, InvalidArgument
from durable_schedule.evaluation.cron.spec import Cron, with_seed
from durable_schedule.evaluation.timeline import (
    After,
    At,
    Every,
    ScheduleSpec,
    as_utc,
    next_instant_after,
    validate_spec,
)
from durable_schedule.schedules import validation as check
from durable_schedule.store.transactions import validate_scope_id

MAX_COUNT = 1000
_ONE_US = timedelta(microseconds=1)
_EARLIEST = datetime.min.replace(tzinfo=UTC)


def _identity(identity: Any) -> tuple[str, str] | None:
    if identity is None:
        return None
    if not isinstance(identity, tuple) or len(identity) != 2:
        raise InvalidArgument("identity must be a (scope, schedule_id) tuple", field="identity")
    scope, schedule_id = identity
    validate_scope_id(scope)
    return scope, check.schedule_id(schedule_id)


def next_instants(spec: ScheduleSpec, after: datetime, count: int = 10, *,
                  inclusive: bool = False,
                  identity: tuple[str, str] | None = None) -> list[datetime]:
    """The next ``count`` nominal instants of ``spec`` after ``after`` (at or after it when
    ``inclusive``), as aware UTC datetimes, ascending; fewer when the spec has no more.

    Raises DS101-DS103 / DS125-DS127 for a bad spec, DS128 when ``identity`` is needed, DS406
    for a bad ``count`` or ``identity`` (and for ``inclusive`` with ``after`` at
    ``datetime.min``: no instant precedes it to look after).
    """
    spec = validate_spec(spec)
    start = as_utc(after, "after", wrong_type=InvalidArgument)
    if type(count) is not int or not 1 <= count <= MAX_COUNT:
        raise InvalidArgument(f"count must be an integer between 1 and {MAX_COUNT}",
                              field="count")
    if not isinstance(inclusive, bool):
        raise InvalidArgument("inclusive must be True or False", field="inclusive")
    ident = _identity(identity)
    if isinstance(spec, Cron):
        if ident is not None:
            spec = with_seed(spec, *ident)
        elif spec.pattern.uses_h and spec.h_seed is None:
            raise CronIdentityRequired("the expression uses H: pass identity=(scope, "
                                       "schedule_id) to preview its jitter",
                                       expression=spec.expression)
    if isinstance(spec, Every) and spec.anchor is None and ident is None:
        raise CronIdentityRequired("Every without an anchor: pass identity=(scope, schedule_id) "
                                   "(the preview then takes `after` as the acceptance instant) "
                                   "or give anchor=")
    # ``inclusive``: look after the instant one microsecond earlier (the finest resolution).
    if inclusive and start == _EARLIEST:
        raise InvalidArgument("inclusive needs an instant before `after`, and `after` is the "
                              "earliest one a datetime can hold: pass inclusive=False",
                              field="inclusive")
    # An unanchored Every starts at the acceptance instant, which is also the starting cursor:
    # its k = 0 instant never runs, so a create at `after` would not schedule it (inclusive or
    # not). After's instant lies after `after` anyway.
    anchored_at_acceptance = isinstance(spec, Every) and spec.anchor is None
    cursor = start - _ONE_US if inclusive and not anchored_at_acceptance else start
    accepted = start
    out: list[datetime] = []
    while len(out) < count:
        nxt = next_instant_after(spec, accepted, cursor)
        if nxt is None:
            break
        out.append(nxt.astimezone(UTC))
        cursor = nxt
        if isinstance(spec, At | After):
            break
    return out
