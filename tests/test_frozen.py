"""durable_schedule/frozen.py: a made instance is the one the class's constructor builds."""

from __future__ import annotations

import dataclasses
import pickle
import uuid
from dataclasses import InitVar, dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from durable_schedule.evaluation.decision import Decision
from durable_schedule.frozen import maker
from durable_schedule.processor.bridge import Bridged, OccurrenceIdentity, WorkLink
from durable_schedule.processor.dispatcher import Claim
from durable_schedule.processor.step import ScheduleOutcome
from durable_schedule.schedules.records import Definition, _definition

T = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
LINK = WorkLink(uuid.UUID(int=7), "schedule:s:1:nominal:x", "occurrence:x", "x")

#: One value per field of each class the batched pass builds with maker(), in field order.
SAMPLES = {
    Claim: (3, "s-1", 9),
    Decision: ("nominal", T, T, 1, T, T + timedelta(hours=1), None, {"count": 1}, None, None),
    OccurrenceIdentity: ("scope", "s-1", 2, "nominal", T, None, None),
    WorkLink: (uuid.UUID(int=7), "schedule:s:1:nominal:x", "occurrence:x", "x"),
    Bridged: (LINK, True, None),
    ScheduleOutcome: (3, "scope", "s-1", "nominal", uuid.UUID(int=7), "nominal", None, False,
                      T, T, {"action": "nominal"}),
    Definition: tuple(range(33)),
}


def _kwargs(cls, values):
    return dict(zip((f.name for f in dataclasses.fields(cls)), values, strict=True))


@pytest.mark.parametrize("cls", list(SAMPLES), ids=lambda c: c.__name__)
def test_maker__builds_what_the_constructor_builds(cls):
    values = SAMPLES[cls]
    made, built = maker(cls)(*values), cls(**_kwargs(cls, values))
    assert type(made) is cls
    assert vars(made) == vars(built)
    assert made == built and repr(made) == repr(built)
    try:
        expected_hash = hash(built)
    except TypeError:  # a dict-valued field (evidence, detail): neither is hashable
        with pytest.raises(TypeError):
            hash(made)
    else:
        assert hash(made) == expected_hash
    assert pickle.loads(pickle.dumps(made)) == built


@pytest.mark.parametrize("cls", list(SAMPLES), ids=lambda c: c.__name__)
def test_maker__instances_stay_frozen(cls):
    made = maker(cls)(*SAMPLES[cls])
    name = dataclasses.fields(cls)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, name, None)


def test_maker__refuses_a_wrong_number_of_fields():
    with pytest.raises(ValueError):
        maker(Claim)(1, "s")
    with pytest.raises(ValueError):
        maker(Claim)(1, "s", 2, 3)


def test_maker__cached_property_still_computes_per_instance():
    identity = maker(OccurrenceIdentity)(*SAMPLES[OccurrenceIdentity])
    assert identity.first_iso == OccurrenceIdentity(*SAMPLES[OccurrenceIdentity]).first_iso


def test_maker__refuses_classes_whose_init_does_more_than_store_fields():
    @dataclass
    class NotFrozen:
        a: int

    @dataclass(frozen=True)
    class PostInit:
        a: int

        def __post_init__(self):
            pass

    @dataclass(frozen=True)
    class WithInitVar:
        a: int
        b: InitVar[int]

    @dataclass(frozen=True)
    class NotInInit:
        a: int
        b: int = field(default=0, init=False)

    @dataclass(frozen=True, slots=True)
    class Slotted:
        a: int

    for cls in (NotFrozen, PostInit, WithInitVar, NotInInit, Slotted, int):
        with pytest.raises(TypeError):
            maker(cls)


def test_definition_rows__equal_the_keyword_construction():
    """records._definition passes every column in field order: the same Definition the
    keyword constructor builds from the same row (row layout of "lock definition")."""
    row = (11, "active", 4, 2, 1, 1, T, None, '{"why": 1}', None, T, T, "every",
           '{"interval_us": 3600000000}', T, '{"work": "x"}', "queue_one", "run_once",
           timedelta(minutes=5), "every-v1", "tester", "s-1", T, "me", "note", T,
           '{"misfire": 2}', T, T + timedelta(days=1), 5, timedelta(seconds=3), 7)
    expected = Definition(
        id=11, scope_id="scope", schedule_id="s-1", state="active", revision=4, generation=2,
        runtime_epoch=1, scope_generation=1, cursor_utc=T, suspension_reason=None,
        suspension_evidence={"why": 1}, suspended_at=None, created_at=T, updated_at=T,
        kind="every", spec_json={"interval_us": 3600000000}, accepted_at_utc=T,
        target_json={"work": "x"}, overlap="queue_one", misfire="run_once",
        safety_window=timedelta(minutes=5), evaluator_version="every-v1", created_by="tester",
        paused_at=T, paused_by="me", pause_note="note", resumed_at=T, missed={"misfire": 2},
        start_at=T, end_at=T + timedelta(days=1), max_runs=5, jitter=timedelta(seconds=3),
        buffer_limit=7)
    assert vars(_definition("scope", "s-1", row)) == vars(expected)
    short = _definition("scope", "s-1", row[:31])  # a query without buffer_limit
    assert vars(short) == vars(dataclasses.replace(expected, buffer_limit=None))
