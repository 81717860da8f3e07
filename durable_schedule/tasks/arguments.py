"""Task arguments are JSON (docs/tasks.md "Arguments"): refused at enqueue, naming the argument.

Django's own backends call ``normalize_json`` and fail with a bare ``TypeError`` somewhere inside
the value; an operator reading "Object of type datetime is not JSON serializable" does not learn
which of forty arguments it was. This walk names the path (``kwargs['when']``, ``args[2][0]``).
Tuples become lists, as ``normalize_json`` makes them; a float that is not finite is refused
because JSON has no NaN or Infinity; a string holding NUL or an unpaired surrogate (which the
store's ``jsonb`` refuses) and an int longer than Python writes as text are refused the same way.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

from durable_schedule.errors import InvalidTaskArguments, TaskArgumentsMismatch
from durable_schedule.work import codec

#: The nesting the store's payload codec admits (work/codec.py refuses deeper with DS209).
#: Checked here while walking, so a value nested past Python's recursion limit (``json.loads``
#: returns one for a 900-bracket body) is DS241 naming the path, not a ``RecursionError``.
MAX_DEPTH = 64
#: Ints longer than this many bits may pass Python's default 4,300-digit int-to-text limit;
#: only those pay for the check that writes them out.
_LONG_INT_BITS = 14_000


#: Signatures of task functions, computed once per function.
_SIGNATURES: dict[Any, inspect.Signature | None] = {}


def fit(task: Any, args: Any, kwargs: Any) -> None:
    """DS271 (also a TypeError) when ``args``/``kwargs`` do not fit the task function's
    signature (after the ``context`` argument of a ``takes_context`` task): accepted, such a
    call failed every attempt with the TypeError the call raised, until the retry policy
    gave up (and a schedule targeting it failed every run)."""
    func = task.func
    if func not in _SIGNATURES:
        try:
            # The callable's own signature, not the one functools.wraps copies from the
            # function it wraps: a decorator may supply arguments (``f(client, *args)``), and
            # the worker calls the wrapper.
            _SIGNATURES[func] = inspect.signature(func, follow_wrapped=False)
        except (TypeError, ValueError):  # no signature Python can read: nothing to check
            _SIGNATURES[func] = None
    signature = _SIGNATURES[func]
    if signature is None:
        return
    leading = (None,) if task.takes_context else ()
    try:
        signature.bind(*leading, *args, **kwargs)
    except TypeError as exc:
        raise TaskArgumentsMismatch(
            f"the arguments do not fit {task.module_path}{signature}: {exc}",
            task=task.module_path) from None


def to_json(args: Any, kwargs: Any) -> dict[str, Any]:
    """``{"args": [...], "kwargs": {...}}`` as plain JSON values, or DS241 naming the path."""
    return {"args": _value(list(args), "args", ARGUMENT),
            "kwargs": _value(dict(kwargs), "kwargs", ARGUMENT)}


#: What the walk's messages name: an argument at enqueue, the return value in the worker (an
#: operator reading a failed attempt must not be told an argument was at fault).
ARGUMENT = "a task argument"
RETURN_VALUE = "the task's return value"


def _value(value: Any, path: str, what: str, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise InvalidTaskArguments(f"{what} nests deeper than {MAX_DEPTH} levels",
                                   path=path[:200], got=type(value).__name__)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        _storable(value, path, what)
        return value
    if isinstance(value, int):
        if value.bit_length() > _LONG_INT_BITS:
            _writable(value, path, what)
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidTaskArguments(f"{what} is not a finite number", path=path,
                                       got=repr(value))
        return value
    if isinstance(value, (list, tuple)):
        return [_value(item, f"{path}[{i}]", what, depth + 1) for i, item in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidTaskArguments(f"{what}'s dict keys must be strings",
                                           path=f"{path}[{key!r}]", got=type(key).__name__)
            _storable(key, f"{path}[{key!r}]", what)
            out[key] = _value(item, f"{path}[{key!r}]", what, depth + 1)
        return out
    raise InvalidTaskArguments(f"{what} is not a JSON value", path=path,
                               got=type(value).__name__)


def _storable(text: str, path: str, what: str) -> None:
    # JSON has them, jsonb does not: the store would refuse the payload (DS209) without saying
    # which argument carried them.
    if "\x00" in text:
        raise InvalidTaskArguments(f"{what} holds a NUL character, which the store "
                                   "(jsonb) refuses", path=path[:200], got="str")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidTaskArguments(f"{what} holds an unpaired surrogate, which is "
                                       "not UTF-8", path=path[:200], got="str") from None


def _writable(number: int, path: str, what: str) -> None:
    """An int too long for Python's int-to-text limit (``sys.set_int_max_str_digits``)."""
    try:
        str(number)
    except ValueError:
        raise InvalidTaskArguments(f"{what} is an integer too long to write as JSON",
                                   path=path[:200], got="int") from None


def return_value(value: Any) -> Any:
    """The task's return value as JSON, or TypeError (the attempt fails, as Django's do).

    The message names the return value and the path inside it (``return value['rows'][3] is
    set``), never "a task argument": the arguments were accepted at enqueue. A value larger
    than the store holds is ``PayloadTooLarge`` (DS250), the error the runtime would fail the
    attempt with, raised here so that ``task_finished`` reports the failed attempt instead of
    a success the store never recorded.
    """
    try:
        checked = _value(value, "return value", RETURN_VALUE)
    except InvalidTaskArguments as exc:
        raise TypeError(f"{exc.message}: {exc.context.get('path')} is "
                        f"{exc.context.get('got')}") from None
    codec.canonical_json(checked, "result")
    return checked
