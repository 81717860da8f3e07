"""Whether a missing browser skips the real-browser test or fails it.

`make test` must run on a machine without root or apt (README "Commands"), so by default a
missing Chromium skips the test with one line saying how to enable it. CI installs Chromium first
and sets ``DURABLE_REQUIRE_BROWSER=1`` (.ci/run): there the same condition is a failure, so the
browser test can never be silently skipped where it is supposed to run.
"""

from __future__ import annotations

import os

import pytest

ENABLE = ("install Debian's chromium (`make browser` as root) or set "
          "DURABLE_CHROMIUM=/path/to/chromium")


def required() -> bool:
    return os.environ.get("DURABLE_REQUIRE_BROWSER") == "1"


def skip_or_fail(reason: str) -> None:
    if required():
        pytest.fail(f"DURABLE_REQUIRE_BROWSER=1, but {reason}", pytrace=False)
    pytest.skip(reason)
