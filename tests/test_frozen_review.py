"""durable_schedule/frozen.py, adversarial review: a made value behaves as the constructor's
under copy, replace, hashing and comparison, and a class changed after the call sites were
written fails loudly (at import, or at the first call), never with shifted fields."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

from durable_schedule.frozen import maker
from durable_schedule.processor.bridge import Bridged, OccurrenceIdentity, WorkLink
from durable_schedule.processor.dispatcher import Claim
from tests.test_frozen import SAMPLES

_HASHABLE = [Claim, OccurrenceIdentity, WorkLink, Bridged]


@pytest.mark.parametrize("cls", list(SAMPLES), ids=lambda c: c.__name__)
def test_made__copy_deepcopy_and_replace_give_the_constructors_value(cls):
    values = SAMPLES[cls]
    made = maker(cls)(*values)
    built = cls(*values)
    for other in (copy.copy(made), copy.deepcopy(made), pickle.loads(pickle.dumps(made, 0))):
        assert type(other) is cls and other == built and vars(other) == vars(built)
    first = dataclasses.fields(cls)[0].name
    replaced = dataclasses.replace(made, **{first: values[0]})
    assert replaced == built and replaced is not made
    assert dataclasses.astuple(made) == dataclasses.astuple(built)
    assert [f.name for f in dataclasses.fields(made)] == list(vars(made))[:len(values)]


@pytest.mark.parametrize("cls", _HASHABLE, ids=lambda c: c.__name__)
def test_made__is_interchangeable_with_the_constructors_as_a_key(cls):
    values = SAMPLES[cls]
    made = maker(cls)(*values)
    table = {cls(*values): "built"}
    assert table[made] == "built"
    assert {made, cls(*values)} == {made}


@pytest.mark.parametrize("cls", list(SAMPLES), ids=lambda c: c.__name__)
def test_made__cannot_be_changed_or_emptied(cls):
    made = maker(cls)(*SAMPLES[cls])
    name = dataclasses.fields(cls)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(made, name)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.unknown = 1


def test_maker__refuses_an_inherited_post_init_and_a_subclass_of_one():
    @dataclass(frozen=True)
    class Base:
        a: int

        def __post_init__(self):
            pass

    @dataclass(frozen=True)
    class Child(Base):
        b: int = 0

    for cls in (Base, Child):
        with pytest.raises(TypeError):
            maker(cls)


def test_maker__a_field_added_with_a_default_fails_the_first_old_call():
    # A call site written for three fields, against the class after a fourth field with a
    # default was added (at the end or in the middle): the make() call raises, it never
    # builds a value with the default or with the values shifted by one.
    @dataclass(frozen=True)
    class Before:
        a: int
        b: str
        c: int

    @dataclass(frozen=True)
    class AddedAtEnd:
        a: int
        b: str
        c: int
        d: int = 0

    @dataclass(frozen=True)
    class AddedInMiddle:
        a: int
        x: str = ""
        b: str = ""
        c: int = 0

    assert maker(Before)(1, "b", 3) == Before(1, "b", 3)
    for cls in (AddedAtEnd, AddedInMiddle):
        make = maker(cls)  # the class is still one maker serves
        with pytest.raises(ValueError):
            make(1, "b", 3)


def test_maker__a_default_factory_is_not_applied_every_field_is_given():
    @dataclass(frozen=True)
    class WithFactory:
        a: int
        tags: dict = field(default_factory=dict)

    made = maker(WithFactory)(1, None)
    assert made.tags is None and made == WithFactory(1, None)
    with pytest.raises(ValueError):
        maker(WithFactory)(1)


def test_maker__a_keyword_only_class_takes_its_fields_in_declaration_order():
    @dataclass(frozen=True, kw_only=True)
    class Keywords:
        a: int
        b: str

    assert maker(Keywords)(1, "x") == Keywords(a=1, b="x")
