"""Building frozen dataclass instances without their generated ``__init__``.

A frozen dataclass's ``__init__`` stores each field with ``object.__setattr__`` (the class's own
``__setattr__`` refuses): about 0.14 µs per field, so the 33-field ``Definition`` costs 4.6 µs
where filling its ``__dict__`` costs 1.5. The batched schedule pass builds several such values
per schedule (the definition row, the decision, the occurrence identity, the Work link, the
outcome), which together were about a tenth of its client time (docs/benchmarks.md "Batched
schedule passes, fourth round").

:func:`maker` returns a function that takes every field positionally, in declaration order,
and returns the instance the class's own constructor would: the same ``__dict__``, so equal,
with the same hash and ``repr``, and still frozen (``__setattr__`` is the class's). It is only
for classes the generated ``__init__`` does nothing else for: no ``__post_init__``, no
``InitVar`` or ``init=False`` field, no ``__slots__``, no field default factory the caller
relies on (every field is passed). :func:`maker` refuses any other class, so a change to such a
class fails at import, not silently. tests/test_frozen.py compares both constructions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def maker(cls: type[T]) -> Callable[..., T]:
    """``make(*values)``: ``cls(*values)`` with every field given, in field order."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or not params.init:
        raise TypeError(f"{cls.__name__} is not a frozen dataclass with a generated __init__")
    if hasattr(cls, "__post_init__") or "__slots__" in cls.__dict__:
        raise TypeError(f"{cls.__name__}.__init__ does more than store its fields")
    declared = cls.__dataclass_fields__.values()  # type: ignore[attr-defined]
    every = dataclasses.fields(cls)  # the fields proper (no ClassVar, no InitVar)
    if len(every) != len(declared) or not all(f.init for f in every):
        raise TypeError(f"{cls.__name__} has a field its __init__ does not simply store")
    names = tuple(f.name for f in every)
    new = object.__new__

    def make(*values: Any) -> T:
        obj = new(cls)
        obj.__dict__.update(zip(names, values, strict=True))  # a missing field: ValueError
        return obj

    make.__name__ = f"make_{cls.__name__}"
    return make
