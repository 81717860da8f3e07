"""Fixtures of the operations tests: the Work test helpers (definitions forgotten after the
test) and a registered schedule target."""

from tests.schedules.conftest import target  # noqa: F401  (fixture)
from tests.work.conftest import define  # noqa: F401  (fixture)
