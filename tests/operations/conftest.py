"""Fixtures of the operations tests: the Work test helpers (definitions forgotten after the
test, a worker pass without the renewal thread)."""

from tests.work.conftest import define  # noqa: F401  (fixture)
