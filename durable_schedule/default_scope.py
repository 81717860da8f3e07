"""The ``DEFAULT_SCOPE`` setting: a single-tenant project may leave the scope out of every call.

Every public call that takes a scope as its first argument (``schedules.create`` / ``update`` /
``delete`` / ``release_after_recovery`` / ``suspend`` / ``get`` / ``list`` / ``occurrences`` /
``produced_work``, ``work.enqueue`` / ``enqueue_many`` / ``get`` / ``list`` / ``attempts`` /
``record_proof`` / ``resume`` / ``cancel``, and
``WorkDefinition.enqueue(scope=...)``) is wrapped by :func:`scope_optional`. The scope is
omitted when the call names no ``scope`` and its arguments only fit the signature once a scope
is put in front of them, or when it passes ``scope=None``. Then ``DURABLE_SCHEDULE
['DEFAULT_SCOPE']`` is used, and without one the call raises ``ScopeRequired`` (DS410) before
touching the database (docs/getting-started.md "One scope for a single-tenant project").

Positional arguments cannot always tell the two readings apart: ``suspend("tenant-7",
"nightly", actor="ops")`` is a call that left the scope out, or one that passed the scope and
left the required ``reason`` out. Without a default scope neither reading can run, so DS410 is
raised with both in its message (the missing argument named as Python names it); ScopeRequired
is a TypeError, like Python's own error for a missing argument. With a default scope the
documented reading (scope omitted) is taken.

The rule is decided by binding the arguments, not by counting them, so passing every argument
by keyword works as well (``schedules.get(schedule_id="nightly")``). Optional parameters that
follow the scope positionally (``work.list``'s ``state``, ``schedules.delete``'s
``expected_revision``) must then be named: ``work.list(state="pending")``, because a lone
positional string is read as the scope, exactly as without a default scope.

A decorator keeps the wrapped signatures unchanged: the scope stays the first parameter, the
calls that pass it behave exactly as before, and a multi-tenant project that sets no default
scope sees no difference except the clearer error for a forgotten scope.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from durable_schedule import conf
from durable_schedule.errors import ScopeRequired

F = TypeVar("F", bound=Callable[..., Any])


def resolve(scope: str | None, call: str = "this call") -> str:
    """``scope``, or the DEFAULT_SCOPE setting when ``scope`` is None (DS410 without one)."""
    if scope is not None:
        return scope
    default = conf.validated_default_scope()
    if default is None:
        raise ScopeRequired(f"{call} was given no scope and DURABLE_SCHEDULE['DEFAULT_SCOPE'] "
                            "is not set")
    return default


def scope_optional(func: F) -> F:
    """Let callers omit ``func``'s leading ``scope`` parameter (see the module docstring)."""
    signature = inspect.signature(func)
    name = f"{func.__module__.rsplit('.', 1)[0]}.{func.__qualname__}"

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if "scope" in kwargs:
            kwargs["scope"] = resolve(kwargs["scope"], name)
            return func(*args, **kwargs)
        # The call itself runs outside every ``except``: an error it raises (DS109, a database
        # error) must not carry the binding's TypeError as its context, which Python would
        # print first ("During handling of the above exception ...").
        missing = _missing_scope(signature, args, kwargs)
        if missing is None:
            if args and args[0] is None:
                return func(resolve(None, name), *args[1:], **kwargs)
            return func(*args, **kwargs)
        if missing is _WRONG_EITHER_WAY:
            # The arguments are wrong with or without a scope: Python's own message says
            # which, exactly as without the decorator.
            return func(*args, **kwargs)
        if args and conf.default_scope() is None:
            # Ambiguous: these arguments are a call that left the scope out, or a call that
            # passed the scope first and left a required argument out (suspend(scope, id,
            # actor=...) without its reason). Both are refused here; the message names both
            # so the missing argument is not hidden behind "no scope".
            raise ScopeRequired(
                f"{name} was given no scope and DURABLE_SCHEDULE['DEFAULT_SCOPE'] is not "
                f"set; or, if {_shown(args[0])} is the scope, the call is {missing}"
            )
        return func(resolve(None, name), *args, **kwargs)

    return wrapper  # type: ignore[return-value]


_WRONG_EITHER_WAY = "wrong with or without a scope"


def _missing_scope(signature: inspect.Signature, args: tuple, kwargs: dict) -> str | None:
    """None when the arguments fit as written (the scope is among them); else Python's message
    for them as written when they fit once a scope is put first (the scope was left out), or
    ``_WRONG_EITHER_WAY``."""
    try:
        signature.bind(*args, **kwargs)
        return None
    except TypeError as as_written:
        problem = str(as_written)
    try:
        signature.bind(None, *args, **kwargs)
    except TypeError:
        return _WRONG_EITHER_WAY
    return problem


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
