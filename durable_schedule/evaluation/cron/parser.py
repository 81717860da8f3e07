"""The Cronos grammar "cronos-v1" (HangfireIO/Cronos README "Cron grammar"; docs/schedules.md).

``parse(expression, seed)`` returns a :class:`CronPattern`: the sorted value sets of every field
plus the day-of-month / day-of-week modifiers (``L``, ``L-n``, ``W``, ``nL``, ``#n``) and the
*interval* flag. Everything the grammar does not admit raises ``InvalidCronExpression`` (DS125)
naming the field and the character position. The grammar, case-insensitive::

    cron         ::= expression | macro
    expression   ::= [second] minute hour day-of-month month day-of-week   (space or tab)
    field        ::= '*' [step] | '?' [step] | 'H' [step] | value [range] [list]
    day-of-month ::= '*' [step] | '?' [step] | 'H' [step] | 'L' ['-' n] ['W']
                   | value 'W' | value [range] [list]
    day-of-week  ::= '*' [step] | '?' [step] | 'H' [step] | value ('L' | '#' n)
                   | value [range] [list]
    list ::= {',' value [range]}   range ::= '-' value [step] | step   step ::= '/' number
    value ::= number (1-2 digits) | three-letter month or day name

Reversed ranges wrap (``22-1`` = 22,23,0,1; ``FRI-MON``), computed exactly as Cronos does,
including a step that continues across the wrap. ``H`` draws one value (or, with ``H/n``, a
start offset below ``n``) from the schedule's seed (see ``seed.py``); without a seed an
expression with ``H`` still parses (for validation) but cannot be evaluated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from durable_schedule.evaluation.cron.fields import (
    H_LAST_DAY_OF_MONTH,
    Field,
    expression_error,
)
from durable_schedule.evaluation.cron.seed import h_draw

GRAMMAR_VERSION = "cronos-v1"
MAX_EXPRESSION = 200

#: Cronos's macros, without a seed (jitter only where ``H`` is written: ``@hourly`` is
#: ``0 * * * *``).
MACROS = {
    "@every_second": "* * * * * *",
    "@every_minute": "* * * * *",
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}

_TOKEN = re.compile(r"[^ \t]+")


@dataclass(frozen=True)
class CronPattern:
    """A parsed expression. Value tuples are sorted; day-of-week uses 0-6 (Sunday = 0)."""

    expression: str
    has_seconds: bool
    seconds: tuple[int, ...]
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: tuple[int, ...]          # day-of-month values (all of 1-31 for *, L and W forms)
    months: tuple[int, ...]
    weekdays: tuple[int, ...]      # 0-6
    dom_any: bool                  # day-of-month is * or ? (unrestricted)
    dow_any: bool                  # day-of-week is * or ? (unrestricted)
    dom_last: bool                 # L / L-n
    dom_last_offset: int           # n of L-n
    dom_nearest_weekday: bool      # W / LW / L-nW
    dow_last: bool                 # nL: the last such weekday of the month
    dow_nth: int                   # n of d#n (0: not used)
    interval: bool                 # Cronos: second, minute or hour has *, a range or a step
    uses_h: bool
    macro: str | None = None
    fields: tuple[str, ...] = ()   # the field texts as written (upper-cased), for explain()


class _Cursor:
    """A position in one field's text, reporting errors at absolute expression positions."""

    def __init__(self, field: Field, text: str, offset: int, expression: str) -> None:
        self.field, self.text, self.i, self.offset = field, text, 0, offset
        self.expression = expression

    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def accept(self, ch: str) -> bool:
        if self.peek() == ch:
            self.i += 1
            return True
        return False

    def at_end(self) -> bool:
        return self.i >= len(self.text)

    def fail(self, message: str):
        return self.field.error(message, self.expression, self.offset + self.i)

    def number(self, low: int, high: int, what: str) -> int:
        start = self.i
        while self.peek().isdigit() and self.peek().isascii():
            self.i += 1
        digits = self.text[start:self.i]
        if not digits or len(digits) > 2:
            self.i = start
            raise self.fail(f"expected {what}, a number between {low} and {high}")
        value = int(digits)
        if not low <= value <= high:
            self.i = start
            raise self.fail(f"{what} must be between {low} and {high}, got {value}")
        return value

    def value(self) -> int:
        """A number in the field's range or a three-letter name."""
        field = self.field
        if self.peek().isdigit():
            return self.number(field.low, field.high, "a value")
        start = self.i
        word = self.text[start:start + 3]
        named = field.name_value(word) if len(word) == 3 and word.isalpha() else None
        if named is None:
            names = "" if field.names is None else f" or a name {field.names[0]}-{field.names[-1]}"
            raise self.fail(f"expected a number between {field.low} and {field.high}{names}")
        self.i += 3
        return named


def _csharp_rem(a: int, b: int) -> int:
    """``a % b`` with C#'s truncating sign rule (Cronos computes reversed steps with it)."""
    q = abs(a) // abs(b)
    return a - b * (q if (a >= 0) == (b > 0) else -q)


def _span(field: Field, low: int, high: int, step: int) -> set[int]:
    if high >= low:
        return set(range(low, high + 1, step))
    # Reversed range (Cronos GetReversedRangeBits): low..top, then wrap to the start, the step
    # continuing across the wrap; day-of-week skips one of its two Sundays.
    top = field.high - (1 if field is Field.DAY_OF_WEEK else 0)
    values = set(range(low, top + 1, step))
    restart = field.low + step - _csharp_rem(top - low, step) - 1
    return values | set(range(restart, high + 1, step))


class _FieldParse:
    """The result of one field: its values and the flags it sets."""

    def __init__(self) -> None:
        self.values: set[int] = set()
        self.interval = False
        self.any = False
        self.uses_h = False
        self.last = False
        self.last_offset = 0
        self.nearest_weekday = False
        self.nth = 0


def _step(cur: _Cursor, high: int) -> int:
    return cur.number(1, high, "a step")


def _star_or_h(cur: _Cursor, out: _FieldParse, seed: int | None) -> bool:
    """``*``/``?`` [step] or ``H`` [step]; True when the field was one of those."""
    field = cur.field
    if cur.accept("*") or cur.accept("?"):
        if cur.accept("/"):
            out.values = _span(field, field.low, field.high, _step(cur, field.high))
            out.interval = True
        else:
            out.values = set(range(field.low, field.high + 1))
            out.any = True
            out.interval = True
        return True
    if cur.accept("H"):
        out.uses_h = True
        high = H_LAST_DAY_OF_MONTH if field is Field.DAY_OF_MONTH else field.high
        if field is Field.DAY_OF_WEEK:
            high = 6  # one Sunday only, so every weekday is equally likely
        if cur.accept("/"):
            # A step goes up to the field's highest value, as everywhere (Cronos; ``H/7`` in
            # day-of-week is one weekday); day-of-month keeps Cronos's 28.
            step = _step(cur, high if field is Field.DAY_OF_MONTH else field.high)
            offset = h_draw(seed, field, step)
            out.values = set(range(field.low + offset, high + 1, step))
            out.interval = True
        else:
            out.values = {field.low + h_draw(seed, field, high - field.low + 1)}
        return True
    return False


def _range_tail(cur: _Cursor, out: _FieldParse, low: int) -> None:
    field = cur.field
    if cur.accept("-"):
        high = cur.value()
        step = _step(cur, field.high) if cur.accept("/") else 1
        out.values |= _span(field, low, high, step)
        out.interval = True
    elif cur.accept("/"):
        out.values |= _span(field, low, field.high, _step(cur, field.high))
        out.interval = True
    else:
        out.values.add(low)


def _list(cur: _Cursor, out: _FieldParse, first: int) -> None:
    _range_tail(cur, out, first)
    while cur.accept(","):
        _range_tail(cur, out, cur.value())


def _parse_field(cur: _Cursor, seed: int | None) -> _FieldParse:
    out = _FieldParse()
    field = cur.field
    if not _star_or_h(cur, out, seed):
        if field is Field.DAY_OF_MONTH and cur.accept("L"):
            out.last = True
            out.values = set(range(1, 32))
            if cur.accept("-"):
                out.last_offset = cur.number(0, 30, "the offset after L-")
            out.nearest_weekday = cur.accept("W")
        else:
            first = cur.value()
            if field is Field.DAY_OF_MONTH and cur.accept("W"):
                out.values = {first}
                out.nearest_weekday = True
            elif field is Field.DAY_OF_WEEK and cur.accept("L"):
                out.values = {first}
                out.last = True
            elif field is Field.DAY_OF_WEEK and cur.accept("#"):
                out.values = {first}
                out.nth = cur.number(1, 5, "the occurrence after #")
            else:
                _list(cur, out, first)
    if not cur.at_end():
        raise cur.fail(f"unexpected character {cur.peek()!r}")
    if not field.can_define_interval:
        out.interval = False
    return out


def parse(expression: str, seed: int | None = None) -> CronPattern:
    """Parse ``expression`` (5 or 6 fields, or a macro); DS125 on anything else.

    ``seed`` is the schedule's ``H`` seed; ``None`` parses ``H`` with a zero seed, which is only
    good for validation (the caller refuses to evaluate an ``H`` expression without its seed).
    """
    if not isinstance(expression, str):
        raise expression_error("the expression must be a string", repr(expression), 0)
    if len(expression) > MAX_EXPRESSION:
        raise expression_error(f"the expression is longer than {MAX_EXPRESSION} characters",
                               expression, MAX_EXPRESSION)
    for i, ch in enumerate(expression):
        if not (ch.isascii() and (ch.isprintable() or ch == "\t")):
            raise expression_error(f"character {ch!r} is not allowed", expression, i)
    text = expression.upper()
    tokens = [(m.start(), m.group()) for m in _TOKEN.finditer(text)]
    macro = None
    if tokens and tokens[0][1].startswith("@"):
        name = tokens[0][1].lower()
        if len(tokens) != 1 or name not in MACROS:
            raise expression_error(
                f"unknown macro {tokens[0][1]!r}; macros: {', '.join(MACROS)}",
                expression, tokens[0][0])
        macro = name
        tokens = [(tokens[0][0], t) for t in MACROS[name].split(" ")]
    if len(tokens) not in (5, 6):
        raise expression_error(
            f"expected 5 fields (minute hour day-of-month month day-of-week) or 6 (with a "
            f"leading second), got {len(tokens)}", expression,
            tokens[-1][0] if tokens else 0)
    has_seconds = len(tokens) == 6
    fields = list(Field) if has_seconds else list(Field)[1:]
    parsed: dict[Field, _FieldParse] = {}
    for field, (offset, token) in zip(fields, tokens, strict=True):
        cur = _Cursor(field, token, 0 if macro else offset, expression)
        parsed[field] = _parse_field(cur, seed)
    if not has_seconds:
        zero = _FieldParse()
        zero.values = {0}
        parsed[Field.SECOND] = zero
    dom, dow = parsed[Field.DAY_OF_MONTH], parsed[Field.DAY_OF_WEEK]
    weekdays = {0 if v == 7 else v for v in dow.values}
    return CronPattern(
        expression=expression,
        has_seconds=has_seconds,
        seconds=tuple(sorted(parsed[Field.SECOND].values)),
        minutes=tuple(sorted(parsed[Field.MINUTE].values)),
        hours=tuple(sorted(parsed[Field.HOUR].values)),
        days=tuple(sorted(dom.values)),
        months=tuple(sorted(parsed[Field.MONTH].values)),
        weekdays=tuple(sorted(weekdays)),
        dom_any=dom.any, dow_any=dow.any or len(weekdays) == 7 and not (dow.last or dow.nth),
        dom_last=dom.last, dom_last_offset=dom.last_offset,
        dom_nearest_weekday=dom.nearest_weekday,
        dow_last=dow.last, dow_nth=dow.nth,
        interval=any(p.interval for p in parsed.values()),
        uses_h=any(p.uses_h for p in parsed.values()),
        macro=macro,
        fields=tuple(t for _, t in tokens),
    )
