"""Issue 3 item 1: ``work.define`` and the per-process registry."""

from __future__ import annotations

import pytest

from durable_schedule import work
from durable_schedule.errors import DuplicateWorkDefinition, InvalidArgument, InvalidIdentifier


def test_define__registers_one_name_and_version_once(define):
    d = define("t.registry")
    assert work.lookup("t.registry", "v1") is d and work.lookup("t.registry", "v2") is None
    with pytest.raises(DuplicateWorkDefinition):
        define("t.registry")
    assert define("t.registry", "v2") is work.lookup("t.registry", "v2")


def test_define__an_executor_or_reconciler_is_registered_once(define):
    d = define("t.once")
    d.executor(lambda ctx, payload: None)
    with pytest.raises(DuplicateWorkDefinition):
        d.executor(lambda ctx, payload: None)
    d.reconciler(lambda ctx, payload: work.NotApplied())
    with pytest.raises(DuplicateWorkDefinition):
        d.reconciler(lambda ctx, payload: work.NotApplied())


@pytest.mark.parametrize("kwargs, error", [
    ({"name": ""}, InvalidIdentifier),
    ({"version": "v1\n"}, InvalidIdentifier),
    ({"safety": "exactly_once"}, InvalidArgument),
    ({"policy": "planned"}, InvalidArgument),
    ({"codec": object()}, InvalidArgument),
])
def test_define__refuses_bad_arguments_and_registers_nothing(define, kwargs, error):
    args = {"name": "t.bad", "version": "v1", **kwargs}
    with pytest.raises(error):
        define(args.pop("name"), args.pop("version"), **args)
    assert work.lookup("t.bad", "v1") is None


def test_define__safety_is_required():
    with pytest.raises(TypeError):
        work.define("t.nosafety", "v1")


def test_autodiscover__imports_the_work_module_of_installed_apps():
    work.autodiscover()
    invoice = work.lookup("billing.send_invoice", "v1")
    assert invoice is not None and invoice.reconciler_fn is not None
    assert invoice.safety is work.ProviderSafety.RECONCILE_BEFORE_RETRY
