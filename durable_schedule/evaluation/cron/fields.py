"""The six cron fields of the Cronos grammar and the errors that name them (docs/schedules.md
"Cron grammar").

Each field knows its range, its three-letter names and whether it can make an expression an
*interval* one (Cronos's classification, which decides the autumn-repeat behaviour): only the
second, minute and hour fields can. An error raised through :meth:`Field.error` names the field
and the character position in the expression, so a user sees *where* the expression is wrong.
"""

from __future__ import annotations

from enum import IntEnum

from durable_schedule.errors import InvalidCronExpression

MONTH_NAMES = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
DOW_NAMES = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")

#: ``H`` in day-of-month stays within 1-28 so it never picks a day some month lacks (Cronos).
H_LAST_DAY_OF_MONTH = 28


class Field(IntEnum):
    SECOND = 0
    MINUTE = 1
    HOUR = 2
    DAY_OF_MONTH = 3
    MONTH = 4
    DAY_OF_WEEK = 5

    @property
    def label(self) -> str:
        return _LABELS[self]

    @property
    def low(self) -> int:
        return _BOUNDS[self][0]

    @property
    def high(self) -> int:
        """The highest value the field accepts (day-of-week: 7, a second spelling of Sunday)."""
        return _BOUNDS[self][1]

    @property
    def names(self) -> tuple[str, ...] | None:
        if self is Field.MONTH:
            return MONTH_NAMES
        if self is Field.DAY_OF_WEEK:
            return DOW_NAMES
        return None

    @property
    def can_define_interval(self) -> bool:
        """``*``, a range or a step here makes the expression an interval one (Cronos)."""
        return self in (Field.SECOND, Field.MINUTE, Field.HOUR)

    def name_value(self, word: str) -> int | None:
        """The number of a three-letter name (``JAN`` = 1, ``SUN`` = 0), or ``None``."""
        names = self.names
        if names is None or word not in names:
            return None
        return names.index(word) + (1 if self is Field.MONTH else 0)

    def error(self, message: str, expression: str, position: int) -> InvalidCronExpression:
        """DS125 naming this field and the 0-based character ``position`` in ``expression``."""
        return InvalidCronExpression(
            f"{self.label} field, position {position}: {message}",
            field=self.label, position=position, expression=expression[:200],
        )


_LABELS = {
    Field.SECOND: "second", Field.MINUTE: "minute", Field.HOUR: "hour",
    Field.DAY_OF_MONTH: "day-of-month", Field.MONTH: "month", Field.DAY_OF_WEEK: "day-of-week",
}
_BOUNDS = {
    Field.SECOND: (0, 59), Field.MINUTE: (0, 59), Field.HOUR: (0, 23),
    Field.DAY_OF_MONTH: (1, 31), Field.MONTH: (1, 12), Field.DAY_OF_WEEK: (0, 7),
}


def expression_error(message: str, expression: str, position: int) -> InvalidCronExpression:
    """DS125 for a fault that belongs to no single field (field count, macro, characters)."""
    return InvalidCronExpression(
        f"position {position}: {message}", field=None, position=position,
        expression=expression[:200],
    )
