"""The one identifier rule, shared by Python and SQL (docs/security.md "Identifiers").

An identifier (scope, schedule id, command id, idempotency key, Work name and version, actor,
lease owner) is refused when

* it is empty, or made only of whitespace (every character ``str.isspace()`` accepts), or
* it contains a character of Unicode category ``Cc`` (controls), ``Cf`` (format: bidi overrides
  such as U+202E, zero-width joiners, soft hyphen, BOM, tag characters), ``Zl`` (U+2028),
  ``Zp`` (U+2029) or ``Cs`` (lone surrogates).

Those characters make one identifier look like another in logs, the admin and audit history
(U+202E reverses the text after it; U+200B is invisible) or break line-oriented tools.

Why fixed tables instead of ``unicodedata`` at run time: PostgreSQL's regex classes
(``[[:cntrl:]]``, ``[[:space:]]``) follow the server's locale, not Unicode categories, and
Python's ``unicodedata`` changes with the Python version (Unicode 14 in 3.11, 15 in 3.12). The
tables below were generated from Unicode 15.0 (Python 3.12's ``unicodedata``); the SQL function
``durable_schedule_is_identifier`` (store/sql/0009_hardening.sql) carries the same ranges as an
explicit bracket expression. ``tests/hardening/test_identifiers.py`` proves both layers agree
on every code point 0..0x10FFFF and that the tables cover every forbidden character of the
running Python's ``unicodedata``.
"""

from __future__ import annotations

import re

UNICODE_VERSION = "15.0.0"

#: Code point ranges (inclusive) of categories Cc, Cf, Zl, Zp and Cs in Unicode 15.0.
FORBIDDEN: tuple[tuple[int, int], ...] = (
    (0x0000, 0x001F), (0x007F, 0x009F), (0x00AD, 0x00AD), (0x0600, 0x0605), (0x061C, 0x061C),
    (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2), (0x180E, 0x180E),
    (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F), (0xD800, 0xDFFF),
    (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
    (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)

#: Code point ranges (inclusive) of what ``str.isspace()`` accepts (the same in Unicode 14/15).
WHITESPACE: tuple[tuple[int, int], ...] = (
    (0x0009, 0x000D), (0x001C, 0x0020), (0x0085, 0x0085), (0x00A0, 0x00A0), (0x1680, 0x1680),
    (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
)


def _python_class(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)


_FORBIDDEN_RE = re.compile(f"[{_python_class(FORBIDDEN)}]")
_BLANK_RE = re.compile(f"[{_python_class(WHITESPACE)}]*")


def sql_bracket(ranges: tuple[tuple[int, int], ...]) -> str:
    """The PostgreSQL ARE bracket expression for ``ranges``. NUL and surrogates cannot occur in
    PostgreSQL text (and have no escape there), so they are left out of the SQL form."""
    parts: list[str] = []
    for a, b in ranges:
        pieces = [(a, b)]
        if a <= 0xDFFF and b >= 0xD800:  # cut the surrogate block out
            pieces = [(a, 0xD7FF), (0xE000, b)]
        for lo, hi in pieces:
            lo = max(lo, 1)
            if lo > hi:
                continue
            parts.append(_sql_char(lo) if lo == hi else f"{_sql_char(lo)}-{_sql_char(hi)}")
    return "[" + "".join(parts) + "]"


def _sql_char(cp: int) -> str:
    return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


def problem(value: str) -> str | None:
    """Why ``value`` is not an acceptable identifier, or ``None`` when it is."""
    bad = _FORBIDDEN_RE.search(value)
    if bad is not None:
        ch = bad.group()
        return f"contains U+{ord(ch):04X}, a control, format or separator character"
    if _BLANK_RE.fullmatch(value):
        return "is empty or only whitespace"
    return None


def is_identifier(value: str) -> bool:
    """The rule as a predicate: what ``durable_schedule_is_identifier(text)`` answers in SQL."""
    return problem(value) is None


def has_forbidden(value: str) -> bool:
    """A forbidden character anywhere (for free text that may be empty, e.g. an actor)."""
    return _FORBIDDEN_RE.search(value) is not None


def strip_forbidden(value: str) -> str:
    """``value`` without its forbidden characters (for defaults built from host names)."""
    return _FORBIDDEN_RE.sub("", value)
