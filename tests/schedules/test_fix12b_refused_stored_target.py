"""A schedule whose stored target can never be accepted as Work -- a payload over the Work cap
(DS250: a row written by hand, or a cap a later release lowered), or one the codec refuses
(DS209) -- used to fail every pass in phase ``bridge``: the schedule stayed active, and each
time its lease expired the pass raised again, forever. It is now quarantined like a row the
code cannot evaluate: suspended ``unevaluable`` with the refusal as evidence (code, size,
limit), visible in durable_status; nothing of it written, the other schedules of the pass go
on, and ``update()`` with a smaller payload repairs it. A transient error in the bridge is
still retried, never quarantined."""

from __future__ import annotations

import io
import json

import pytest
from demo import schedule_targets
from django.core.management import call_command
from django.db import OperationalError

from durable_schedule import schedules
from durable_schedule.errors import (
    PayloadNotEncodable,
    PayloadTooLarge,
    RetriesExhausted,
    UnknownWorkTarget,
)
from durable_schedule.operations.status import collect
from durable_schedule.processor import bridge as bridge_module
from durable_schedule.runner import retry
from durable_schedule.work import codec
from tests.schedules.conftest import (
    HOUR,
    SCOPE,
    SECOND,
    T0,
    create,
    definition,
    history,
    occurrences,
    rows,
    run_pass,
    works,
)

#: The lowered Work cap of these tests ("a later release bounds payloads more tightly").
CAP = 4096


def _target(blob: str):
    return schedule_targets.report.target(payload={"blob": blob})


@pytest.mark.django_db
@pytest.mark.parametrize("batch_size", [1, 50], ids=["alone", "batched"])
def test_payload_over_a_lowered_cap__quarantined_ds250_others_go_on_update_repairs(
    clock, target, monkeypatch, batch_size
):
    clock.set(T0)
    create("big", schedules.Every(HOUR), _target("x" * (2 * CAP)))  # legal when stored
    create("small", schedules.Every(HOUR), target)
    monkeypatch.setattr(codec, "MAX_JSON_BYTES", CAP)

    counts = run_pass(clock, T0 + HOUR + SECOND, batch_size=batch_size)  # raised DS250 before
    assert (counts.claimed, counts.materialized, counts.suspended) == (2, 1, 1)
    d = definition("big")
    assert (d["state"], d["suspension_reason"]) == ("suspended", "unevaluable")
    ev = d["suspension_evidence"]
    assert ev["code"] == PayloadTooLarge.code == "DS250"
    assert ev["context"]["reason"] == "payload_too_large"
    assert ev["context"]["limit"] == CAP and ev["context"]["size"] > 2 * CAP
    assert ev["context"]["phase"] == "bridge"
    assert f"{ev['context']['size']} bytes" in ev["message"]
    assert [h[0] for h in history("big")][-1] == "suspended"
    # Nothing of the refused occurrence was written; the other schedule got its Work.
    assert occurrences("big") == []
    assert definition("small")["state"] == "active"
    assert [o[4] for o in occurrences("small")] == ["materialized"]
    assert len(works()) == 1

    status = collect()
    [s] = status.suspended_schedules
    assert (s.schedule_id, s.code, s.cause) == ("big", "DS250", "payload_too_large")
    out = io.StringIO()
    with pytest.raises(SystemExit):
        call_command("durable_status", stdout=out)
    assert f"{SCOPE}/big: unevaluable (DS250 payload_too_large)" in out.getvalue()

    # Later passes neither raise nor claim it again (only the other schedule is due).
    counts = run_pass(clock, T0 + 2 * HOUR + SECOND, batch_size=batch_size)
    assert (counts.claimed, counts.suspended) == (1, 0)
    assert [o.schedule_id for o in counts.outcomes] == ["small"]

    # Re-issuing the stored target as it is would be refused again: DS250 naming the stored
    # payload and the repair (not DS105, whose "register the Work" does not apply: the Work is
    # registered), nothing changed.
    with pytest.raises(PayloadTooLarge) as err:
        schedules.update(SCOPE, "big", expected_revision=d["revision"])
    assert not isinstance(err.value, UnknownWorkTarget)
    assert err.value.code == "DS250"
    assert err.value.context["schedule_id"] == "big"
    assert err.value.context["refused"] == "stored_target"
    assert err.value.context["limit"] == CAP and err.value.context["size"] > 2 * CAP
    assert "stored target" in err.value.message and "target=" in err.value.message
    after = definition("big")
    assert (after["state"], after["revision"]) == ("suspended", d["revision"])

    # A smaller payload through the public update path repairs it.
    schedules.update(SCOPE, "big", expected_revision=d["revision"], target=_target("x" * 100))
    assert definition("big")["state"] == "active"
    counts = run_pass(clock, T0 + 3 * HOUR + SECOND, batch_size=batch_size)
    assert counts.suspended == 0
    assert [o[4] for o in occurrences("big")] == ["materialized"]


@pytest.mark.django_db
def test_tampered_payload_the_codec_refuses__quarantined_ds209(clock, target):
    """jsonb stores a payload nested deeper than the codec's 64 levels; the codec refuses it
    on every pass (DS209), so it is quarantined too."""
    clock.set(T0)
    create("deep", schedules.Every(HOUR), target)
    create("fine", schedules.Every(HOUR), target)
    nested: object = "leaf"
    for _ in range(80):
        nested = [nested]
    # Generation 2 is generation 1 with that payload (generations are append-only).
    assert rows(
        "insert into durable_schedule_generation (scope_id, schedule_id, generation, kind,"
        " spec, accepted_at_utc, target, overlap_policy, misfire_policy, safety_window,"
        " evaluator_version, created_by) select scope_id, schedule_id, 2, kind, spec,"
        " accepted_at_utc, jsonb_set(target, '{payload}', %s::jsonb), overlap_policy,"
        " misfire_policy, safety_window, evaluator_version, created_by"
        " from durable_schedule_generation where schedule_id = 'deep' returning id",
        (json.dumps(nested),),
    )
    assert rows(
        "update durable_schedule_definition set active_generation = 2"
        " where schedule_id = 'deep' returning id"
    )
    counts = run_pass(clock, T0 + HOUR + SECOND)
    assert (counts.materialized, counts.suspended) == (1, 1)
    d = definition("deep")
    assert (d["state"], d["suspension_reason"]) == ("suspended", "unevaluable")
    ev = d["suspension_evidence"]
    assert ev["code"] == PayloadNotEncodable.code == "DS209"
    assert ev["context"]["reason"] == "payload_not_encodable"
    assert "deeper than" in ev["message"]
    assert occurrences("deep") == []
    assert definition("fine")["state"] == "active"
    # Re-issuing it is refused with the payload's own code (DS209), not DS105.
    with pytest.raises(PayloadNotEncodable) as err:
        schedules.update(SCOPE, "deep", expected_revision=d["revision"])
    assert not isinstance(err.value, UnknownWorkTarget)
    assert (err.value.code, err.value.context["refused"]) == ("DS209", "stored_target")
    assert definition("deep")["revision"] == d["revision"]


@pytest.fixture
def no_backoff(monkeypatch):
    monkeypatch.setattr(retry, "BACKOFF", (0.0, 0.0, 0.0))


@pytest.mark.django_db(transaction=True)
def test_transient_error_in_the_bridge_is_retried_never_quarantined(
    committed_clock, target, monkeypatch, no_backoff
):
    create("s", schedules.Every(HOUR), target)
    real = bridge_module.accept_in_scope

    def cut(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(bridge_module, "accept_in_scope", cut)
    with pytest.raises(RetriesExhausted):
        run_pass(committed_clock, T0 + HOUR + SECOND, batch_size=1)
    assert definition("s")["state"] == "active"  # not quarantined
    assert occurrences("s") == [] and works() == []

    monkeypatch.setattr(bridge_module, "accept_in_scope", real)  # the connection is back
    counts = run_pass(committed_clock, T0 + 2 * HOUR, batch_size=1)  # after the lease expired
    assert (counts.materialized, counts.suspended) == (1, 0)
    assert definition("s")["state"] == "active"


@pytest.mark.django_db
def test_tampered_row_over_the_real_32_mib_cap__quarantined_ds250(clock, target):
    """The row as a hand-written change leaves it: the real cap, no lowered constant."""
    size = codec.MAX_JSON_BYTES + 1024
    clock.set(T0)
    create("huge", schedules.Every(HOUR), target)
    create("fine", schedules.Every(HOUR), target)
    # Generation 2 is generation 1 with the payload written server-side (not encoded here).
    assert rows(
        "insert into durable_schedule_generation (scope_id, schedule_id, generation, kind,"
        " spec, accepted_at_utc, target, overlap_policy, misfire_policy, safety_window,"
        " evaluator_version, created_by) select scope_id, schedule_id, 2, kind, spec,"
        " accepted_at_utc, jsonb_set(target, '{payload,report}', to_jsonb(repeat('x', %s))),"
        " overlap_policy, misfire_policy, safety_window, evaluator_version, created_by"
        " from durable_schedule_generation where schedule_id = 'huge' returning id",
        (size,),
    )
    assert rows(
        "update durable_schedule_definition set active_generation = 2"
        " where schedule_id = 'huge' returning id"
    )
    counts = run_pass(clock, T0 + HOUR + SECOND)
    assert (counts.materialized, counts.suspended) == (1, 1)
    ev = definition("huge")["suspension_evidence"]
    assert (ev["code"], ev["context"]["reason"]) == ("DS250", "payload_too_large")
    assert ev["context"]["size"] > size and ev["context"]["limit"] == codec.MAX_JSON_BYTES
    assert occurrences("huge") == []
    assert definition("fine")["state"] == "active"
