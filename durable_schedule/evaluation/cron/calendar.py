"""Local-calendar matching of a :class:`CronPattern`: which days match, and the next or previous
matching time of day. Pure integer arithmetic on wall-clock values; no time zone here.

Days follow Cronos exactly (CronExpression.FindOccurrence, CalendarHelper):

* **day-of-month and day-of-week both restricted means AND** ("Friday the 13th"), not Vixie's OR;
* ``L-n`` is day ``days_in_month - n`` (no match when that is before the 1st);
* ``W`` moves a Saturday to Friday and a Sunday to Monday without leaving the month: a Saturday
  1st moves to Monday the 3rd, a Sunday on the last day to Friday (``LW``, ``L-nW``, ``nW``); a
  ``nW`` whose day the month lacks does not match that month;
* ``dL`` in day-of-week is the last such weekday (``day + 7 > days_in_month``), ``d#n`` the n-th.

Searching is by jumps — the next allowed month, the next allowed day value, the next hour,
minute and second value — so one call costs O(fields), never a scan of minutes. A pattern that
matches no day within 400 years matches none ever (the Gregorian calendar repeats every 400
years, and 146097 days are a whole number of weeks).
"""

from __future__ import annotations

import calendar as _cal
from bisect import bisect_left, bisect_right
from datetime import date

from durable_schedule.evaluation.cron.parser import CronPattern

CYCLE_YEARS = 400
MIN_YEAR, MAX_YEAR = 1, 9999


def days_in_month(year: int, month: int) -> int:
    return _cal.monthrange(year, month)[1]


def cron_weekday(year: int, month: int, day: int) -> int:
    """0 = Sunday ... 6 = Saturday."""
    return (date(year, month, day).weekday() + 1) % 7


def _nearest_weekday(year: int, month: int, day: int, dim: int) -> int:
    wd = cron_weekday(year, month, day)
    if wd == 0:  # Sunday
        return day - 2 if day == dim else day + 1
    if wd == 6:  # Saturday
        return day + 2 if day == 1 else day - 1
    return day


def _dom_target(p: CronPattern, year: int, month: int, dim: int) -> int | None:
    """The single day an ``L``/``W`` day-of-month selects in this month (None: no day)."""
    if p.dom_last:
        day = dim - p.dom_last_offset
        if day < 1:
            return None
    else:
        day = p.days[0]
        if day > dim:
            return None
    return _nearest_weekday(year, month, day, dim) if p.dom_nearest_weekday else day


def _dow_ok(p: CronPattern, year: int, month: int, day: int, dim: int) -> bool:
    if p.dow_last and day + 7 <= dim:
        return False
    if p.dow_nth and (day - 1) // 7 + 1 != p.dow_nth:
        return False
    if p.dow_any:
        return True
    return cron_weekday(year, month, day) in p.weekdays


def _candidate_days(p: CronPattern, year: int, month: int) -> tuple[int, ...]:
    """The days of this month the day-of-month field admits, ascending."""
    dim = days_in_month(year, month)
    if p.dom_last or p.dom_nearest_weekday:
        target = _dom_target(p, year, month, dim)
        return () if target is None else (target,)
    end = bisect_right(p.days, dim)
    return p.days[:end]


def day_matches(p: CronPattern, year: int, month: int, day: int) -> bool:
    if month not in p.months:
        return False
    if day not in _candidate_days(p, year, month):
        return False
    return _dow_ok(p, year, month, day, days_in_month(year, month))


def next_day(p: CronPattern, year: int, month: int, day: int) -> tuple[int, int, int] | None:
    """The first matching day on or after ``year-month-day`` (None within 400 years / 9999)."""
    stop = min(MAX_YEAR, year + CYCLE_YEARS)
    while year <= stop:
        i = bisect_left(p.months, month)
        if i == len(p.months):
            year, month, day = year + 1, p.months[0], 1
            continue
        if p.months[i] != month:
            month, day = p.months[i], 1
        dim = days_in_month(year, month)
        for d in _candidate_days(p, year, month):
            if d >= day and _dow_ok(p, year, month, d, dim):
                return year, month, d
        if month == 12:
            year, month, day = year + 1, 1, 1
        else:
            month, day = month + 1, 1
    return None


def matches_some_day(p: CronPattern) -> bool:
    """True when some day of the Gregorian calendar matches (one 400-year cycle holds every
    combination of month length, leap day and weekday); False: the pattern never fires."""
    return next_day(p, 2000, 1, 1) is not None


def prev_day(p: CronPattern, year: int, month: int, day: int) -> tuple[int, int, int] | None:
    """The last matching day on or before ``year-month-day`` (None within 400 years / year 1)."""
    stop = max(MIN_YEAR, year - CYCLE_YEARS)
    while year >= stop:
        i = bisect_right(p.months, month) - 1
        if i < 0:
            year, month, day = year - 1, p.months[-1], 31
            continue
        if p.months[i] != month:
            month, day = p.months[i], 31
        dim = days_in_month(year, month)
        for d in reversed(_candidate_days(p, year, month)):
            if d <= day and _dow_ok(p, year, month, d, dim):
                return year, month, d
        if month == 1:
            year, month, day = year - 1, 12, 31
        else:
            month, day = month - 1, 31
    return None


def first_time(p: CronPattern) -> int:
    return p.hours[0] * 3600 + p.minutes[0] * 60 + p.seconds[0]


def last_time(p: CronPattern) -> int:
    return p.hours[-1] * 3600 + p.minutes[-1] * 60 + p.seconds[-1]


def next_time(p: CronPattern, sod: int) -> int | None:
    """The first matching second-of-day ``>= sod`` (lexicographic over hour, minute, second)."""
    h, rest = divmod(sod, 3600)
    m, s = divmod(rest, 60)
    hours, minutes, seconds = p.hours, p.minutes, p.seconds
    i = bisect_left(hours, h)
    if i < len(hours) and hours[i] == h:
        j = bisect_left(minutes, m)
        if j < len(minutes) and minutes[j] == m:
            k = bisect_left(seconds, s)
            if k < len(seconds):
                return h * 3600 + m * 60 + seconds[k]
            j += 1
        if j < len(minutes):
            return h * 3600 + minutes[j] * 60 + seconds[0]
        i += 1
    if i < len(hours):
        return hours[i] * 3600 + minutes[0] * 60 + seconds[0]
    return None


def prev_time(p: CronPattern, sod: int) -> int | None:
    """The last matching second-of-day ``<= sod``."""
    h, rest = divmod(sod, 3600)
    m, s = divmod(rest, 60)
    hours, minutes, seconds = p.hours, p.minutes, p.seconds
    i = bisect_right(hours, h) - 1
    if i >= 0 and hours[i] == h:
        j = bisect_right(minutes, m) - 1
        if j >= 0 and minutes[j] == m:
            k = bisect_right(seconds, s) - 1
            if k >= 0:
                return h * 3600 + m * 60 + seconds[k]
            j -= 1
        if j >= 0:
            return h * 3600 + minutes[j] * 60 + seconds[-1]
        i -= 1
    if i >= 0:
        return hours[i] * 3600 + minutes[-1] * 60 + seconds[-1]
    return None
