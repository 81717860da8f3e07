"""The crash-proof and fault suite (docs/reliability.md).

Options of the soak (tests/crash/test_soak.py); each has an environment twin, which also works
when pytest is started without ``tests/crash`` on its command line (pytest registers a
sub-folder's options only when that folder is named there):

* ``--soak-seed N`` / ``DURABLE_SOAK_SEED=N``: the seed of the fault plan (default 7).
* ``--soak-long`` / ``DURABLE_SOAK_LONG=1``: the manual run, 2,000 schedules (CI: 200).
* ``DURABLE_SOAK_RECORD=1`` (or a path): write the figures to ``tests/crash/last_soak.json``
  (or that path). Never set in CI, which must not modify the tree.
"""

from __future__ import annotations

import os

import pytest
from demo import work as demo_work

from durable_schedule import work


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("durable soak", "durable_schedule crash soak (tests/crash)")
    try:
        group.addoption("--soak-seed", type=int, default=None,
                        help="seed of the crash soak's fault plan (env DURABLE_SOAK_SEED; "
                             "default 7)")
        group.addoption("--soak-long", action="store_true", default=False,
                        help="the long soak: 2,000 schedules (env DURABLE_SOAK_LONG=1)")
    except ValueError:
        # Already registered: a top-level conftest may re-export this hook so the options
        # exist in every pytest run, and then this conftest registers them a second time.
        pass


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


@pytest.fixture
def soak_seed(request) -> int:
    given = request.config.getoption("--soak-seed", default=None)
    if given is None:
        given = int(os.environ.get("DURABLE_SOAK_SEED", "7"))
    return given


@pytest.fixture
def soak_long(request) -> bool:
    return bool(request.config.getoption("--soak-long", default=False)) or _flag(
        "DURABLE_SOAK_LONG")


@pytest.fixture
def invoice():
    """``billing.send_invoice`` (reconcile_before_retry; its effect is a ``demo_effect`` row)."""
    work.autodiscover()
    return demo_work.send_invoice


@pytest.fixture
def touch():
    """``demo.touch`` (idempotent; one ``demo_effect`` row per call)."""
    work.autodiscover()
    return demo_work.touch
