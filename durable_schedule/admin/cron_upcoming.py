"""The next instants of a cron schedule in local time, for the admin's timeline (docs/admin.md).

Evaluated from the active generation and the cursor exactly as the processor would, each with
its local wall time, UTC offset and a DST annotation: "shifted: 02:30 does not exist" for a
wall time in a spring-forward gap (it runs at the gap's end), "repeated hour, first/second
pass" in an autumn repeat.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from durable_schedule.errors import DurableError
from durable_schedule.evaluation.cron import Cron, explain
from durable_schedule.evaluation.timeline import spec_from_json

UPCOMING = 10
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def upcoming(kind, spec_json, evaluator_version, cursor: datetime) -> dict | None:
    """``{"explain", "tz", "instants": [...]}`` for a cron generation; None otherwise."""
    if kind != "cron":
        return None
    try:
        spec = spec_from_json(kind, spec_json, evaluator_version)
        ev = spec.evaluator()
    except DurableError:
        return None
    assert isinstance(spec, Cron)
    zone = ev.zone
    rows = []
    after = (cursor - _EPOCH) // timedelta(seconds=1)
    for occ in ev.upcoming(after, UPCOMING):
        utc = _EPOCH + timedelta(seconds=occ.utc)
        local = utc.astimezone(zone.info)
        wall = datetime(1970, 1, 1) + timedelta(seconds=occ.wall)
        if occ.shifted:
            note = f"shifted: {wall:%H:%M:%S} does not exist on {wall:%Y-%m-%d} (DST gap)"
        elif zone.classify(occ.wall).kind == "fold":
            note = f"repeated hour, {'second' if occ.fold else 'first'} pass"
        else:
            note = ""
        rows.append({"utc": utc, "local": local.strftime("%Y-%m-%d %H:%M:%S"),
                     "offset": local.strftime("%z"), "abbreviation": local.tzname(),
                     "note": note})
    return {"explain": explain(spec.pattern, spec.tz), "tz": spec.tz, "instants": rows}
