"""The lifecycle tests share the Schedule protocol tests' fixtures (tests/schedules/conftest.py)."""

from tests.schedules.conftest import target  # noqa: F401 - a fixture, used by name
