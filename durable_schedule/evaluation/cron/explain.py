"""``explain(pattern, tz)``: one short English sentence for the admin and the preview.

It describes the parsed sets, not the text, so ``*/15`` and ``0,15,30,45`` read the same, and
it says "and" where Cronos ANDs day-of-month with day-of-week ("on day 13 of the month, if it
is a Friday").
"""

from __future__ import annotations

from durable_schedule.evaluation.cron.parser import CronPattern

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_MACRO_TEXT = {
    "@every_second": "Every second", "@every_minute": "Every minute",
    "@hourly": "Every hour, at minute 0", "@daily": "Every day at 00:00",
    "@midnight": "Every day at 00:00", "@weekly": "Every Sunday at 00:00",
    "@monthly": "On day 1 of every month at 00:00", "@yearly": "Every 1 January at 00:00",
    "@annually": "Every 1 January at 00:00",
}


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _runs(values: tuple[int, ...], name=str) -> str:
    """``1,2,3,5,7,8,9`` -> ``1-3, 5 and 7-9`` (names via ``name``)."""
    runs: list[tuple[int, int]] = []
    for v in values:
        if runs and v == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], v)
        else:
            runs.append((v, v))
    parts = [name(a) if a == b else f"{name(a)} to {name(b)}" if b - a > 1 else
             f"{name(a)} and {name(b)}" for a, b in runs]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _progression(values: tuple[int, ...]) -> int | None:
    if len(values) < 3:
        return None
    step = values[1] - values[0]
    if step > 1 and all(b - a == step for a, b in zip(values, values[1:], strict=False)):
        return step
    return None


def _unit(values: tuple[int, ...], full: int, unit: str) -> str:
    if len(values) == full:
        return f"every {unit}"
    step = _progression(values)
    if step is not None and values[0] < step and values[-1] + step >= full:
        start = "" if values[0] == 0 else f" from {unit} {values[0]}"
        return f"every {step} {unit}s{start}"
    if step is not None:
        return f"every {step} {unit}s from {unit} {values[0]} to {values[-1]}"
    return f"{unit} {_runs(values)}" if len(values) == 1 else f"{unit}s {_runs(values)}"


def _time(p: CronPattern) -> str:
    secs, mins, hours = p.seconds, p.minutes, p.hours
    fixed = len(secs) * len(mins) * len(hours)
    if fixed <= 4:
        times = [f"{h:02d}:{m:02d}" + (f":{s:02d}" if p.has_seconds or s else "")
                 for h in hours for m in mins for s in secs]
        return "at " + (times[0] if len(times) == 1 else ", ".join(times[:-1]) + " and "
                        + times[-1])
    parts = []
    if p.has_seconds or secs != (0,):
        parts.append(_unit(secs, 60, "second"))
    if len(mins) == 60 and len(secs) == 60:
        pass  # "every second" already implies every minute
    else:
        parts.append(_unit(mins, 60, "minute"))
    if len(hours) != 24:
        parts.append("past " + _unit(hours, 24, "hour"))
    return ", ".join(parts)


def _day(p: CronPattern) -> str:
    if p.dom_last:
        base = "the last day" if not p.dom_last_offset else (
            f"{p.dom_last_offset} day{'s' if p.dom_last_offset > 1 else ''} before the last day")
        dom = f"on the weekday nearest {base} of the month" if p.dom_nearest_weekday else \
            f"on {base} of the month"
    elif p.dom_nearest_weekday:
        dom = f"on the weekday nearest day {p.days[0]} of the month"
    elif p.dom_any or len(p.days) == 31:
        dom = ""
    else:
        dom = f"on day{'s' if len(p.days) > 1 else ''} {_runs(p.days)} of the month"
    if p.dow_nth:
        dow = f"the {_ordinal(p.dow_nth)} {_DAYS[p.weekdays[0]]} of the month"
    elif p.dow_last:
        dow = f"the last {_DAYS[p.weekdays[0]]} of the month"
    elif p.dow_any:
        dow = ""
    else:
        dow = _runs(p.weekdays, lambda d: _DAYS[d])
    if dom and dow:
        if p.dow_nth or p.dow_last:
            return f"{dom}, if it is {dow}"
        if len(p.weekdays) == 1:
            return f"{dom}, if it is a {dow}"
        return f"{dom}, if it falls on {dow}"
    if dow:
        return f"on {dow}"
    return dom


def explain(pattern: CronPattern, tz: str = "UTC") -> str:
    """A sentence such as "At 02:30, on Monday to Friday (Europe/Berlin time)."."""
    if pattern.macro is not None:
        return f"{_MACRO_TEXT[pattern.macro]} ({tz} time)."
    parts = [_time(pattern)]
    day = _day(pattern)
    if day:
        parts.append(day)
    if len(pattern.months) != 12:
        parts.append("in " + _runs(pattern.months, lambda m: _MONTHS[m - 1]))
    sentence = ", ".join(parts)
    return f"{sentence[0].upper()}{sentence[1:]} ({tz} time)."
