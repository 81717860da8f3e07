"""The next instants of a cron schedule in local time, for the admin's timeline (docs/admin.md).

Evaluated from the active generation and the cursor exactly as the processor would, each with
its local wall time, UTC offset and a DST annotation: "shifted: 02:30 does not exist" for a
wall time in a spring-forward gap (it runs at the gap's end), "repeated hour, first/second
pass" in an autumn repeat. The generation's bounds hold here as in a pass (docs/schedules.md
"Bounds and limits"): no instant after ``end_at`` exists, and no more instants are listed than
``max_runs`` leaves runs.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from durable_schedule.errors import DurableError
from durable_schedule.evaluation.cron import Cron, explain
from durable_schedule.evaluation.timeline import spec_from_json

UPCOMING = 10
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def upcoming(kind, spec_json, evaluator_version, cursor: datetime, *,
             end_at: datetime | None = None, runs_left: int | None = None) -> dict | None:
    """``{"explain", "tz", "instants": [...], "cut"}`` for a cron generation; None otherwise.

    ``end_at``: the generation's last possible instant (inclusive); ``runs_left``: the runs its
    ``max_runs`` still allows (None: unlimited). ``cut`` names the bound that ended the list
    before ten instants: ``"end_at"``, ``"max_runs"``, or ``""``."""
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
    cut = ""
    after = (cursor - _EPOCH) // timedelta(seconds=1)
    wanted = UPCOMING if runs_left is None else min(UPCOMING, max(runs_left, 0))
    for occ in ev.upcoming(after, wanted + 1):
        utc = _EPOCH + timedelta(seconds=occ.utc)
        if end_at is not None and utc > end_at:
            cut = "end_at" if len(rows) < UPCOMING else ""
            break
        if len(rows) == wanted:
            cut = "max_runs" if wanted < UPCOMING else ""
            break
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
    return {"explain": explain(spec.pattern, spec.tz), "tz": spec.tz, "instants": rows,
            "cut": cut}
