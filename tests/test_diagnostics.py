"""docs/protocol/conventions.md rule C7 / issue 2: diagnostic codes are unique, well-formed and
listed in the catalogue."""

from __future__ import annotations

import re
from pathlib import Path

from durable_schedule.errors import DurableError, all_error_classes

CATALOGUE = Path(__file__).resolve().parents[1] / "docs" / "diagnostics.md"


def concrete():
    return [c for c in all_error_classes() if c is not DurableError]


def test_diagnostics__codes_are_unique():
    codes = [c.code for c in concrete()]
    assert len(codes) == len(set(codes)), sorted(codes)


def test_diagnostics__codes_follow_the_family_ranges():
    families = {"ScheduleError": "DS1", "WorkError": "DS2", "SecurityError": "DS3",
                "OperationsError": "DS4"}
    for cls in concrete():
        assert re.fullmatch(r"DS[1-4]\d\d", cls.code), cls
        for base, prefix in families.items():
            if base in [b.__name__ for b in cls.__mro__]:
                assert cls.code.startswith(prefix), (cls, cls.code)


def test_diagnostics__every_code_is_in_the_catalogue_with_its_class_name():
    text = CATALOGUE.read_text()
    for cls in concrete():
        row = re.search(rf"^\|\s*`?{cls.code}`?\s*\|\s*`?{cls.__name__}`?\s*\|", text, re.MULTILINE)
        assert row, f"{cls.code} {cls.__name__} missing from docs/diagnostics.md"


def test_diagnostics__message_carries_code_and_next_action():
    from durable_schedule.errors import RevisionMismatch

    err = RevisionMismatch("expected revision 3, found 4", schedule="s")
    text = str(err)
    assert text.startswith("DS106: expected revision 3, found 4")
    assert RevisionMismatch.next_action in text
    assert err.retriable is False
