"""The per-request shortcuts of the canonical payload and the provider safety (docs/benchmarks.md
"Acceptance, sixth look"): one encoder made once, the C scanner instead of ``json.loads`` for
text the codec made, and a dictionary lookup for a safety's string value. Each must give what
the reference (``json.dumps`` with the canonical options, ``json.loads``, ``ProviderSafety(...)``)
gives, and refuse what it refuses with the same error."""

from __future__ import annotations

import json
import random
from enum import StrEnum

import pytest

from durable_schedule.errors import InvalidArgument, PayloadNotEncodable
from durable_schedule.work import codec
from durable_schedule.work.enqueue import WorkRequest
from durable_schedule.work.safety import ProviderSafety, provider_safety


def _reference(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def _random_value(rng: random.Random, depth: int = 0):
    kinds = ["none", "bool", "int", "float", "str"] + (["list", "dict"] if depth < 4 else [])
    kind = rng.choice(kinds)
    if kind == "none":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "int":
        return rng.choice([0, -1, 2**63, -(2**70), rng.randint(-10**6, 10**6)])
    if kind == "float":
        return rng.choice([0.1, -0.0, 1e300, 5e-324, rng.uniform(-1e6, 1e6)])
    if kind == "str":
        return "".join(rng.choice('ab"\\\n\t é€😀\u2028\ufeff/') for _ in range(rng.randint(0, 8)))
    if kind == "list":
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {"".join(rng.choice("kéy\"\\ ") for _ in range(rng.randint(0, 4))):
            _random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def test_canonical__text_bytes_and_value_are_the_references_for_random_payloads():
    rng = random.Random(16)
    for _ in range(3000):
        value = _random_value(rng)
        text, data = codec.canonical_text_and_bytes(value)
        assert text == _reference(value) == codec.canonical_json(value)
        assert data == text.encode("utf-8") == codec.canonical_bytes(value)
        decoded = codec.from_canonical(text)
        assert decoded == json.loads(text)
        assert json.dumps(decoded) == json.dumps(json.loads(text))  # same types, same order
        assert codec.json_value(value) == json.loads(text)


def test_canonical__tuples_become_lists_and_the_copy_is_detached():
    payload = {"b": (1, 2), "a": {"x": [3]}}
    request = WorkRequest(command_id="c", idempotency_key="k", work_name="t.job",
                          work_version="v1", payload=payload, provider_safety="idempotent")
    assert request.payload == {"a": {"x": [3]}, "b": [1, 2]}
    payload["a"]["x"].append(4)
    assert request.payload == {"a": {"x": [3]}, "b": [1, 2]}
    assert request.__dict__["_payload_bytes"] == b'{"a":{"x":[3]},"b":[1,2]}'


@pytest.mark.parametrize("bad", [float("nan"), {"a": float("inf")}, {1: "x"}, "a\x00b",
                                 "\ud800", {"k": object()}, [set()]])
def test_canonical__what_the_reference_refuses_is_still_ds209(bad):
    with pytest.raises(PayloadNotEncodable) as err:
        codec.canonical_text_and_bytes(bad)
    assert err.value.code == "DS209"
    with pytest.raises(PayloadNotEncodable):
        WorkRequest(command_id="c", idempotency_key="k", work_name="t.job", work_version="v1",
                    payload=bad, provider_safety="idempotent")


def _cycles():
    loop_list: list = [1]
    loop_list.append(loop_list)
    loop_dict: dict = {"a": 1}
    loop_dict["self"] = loop_dict
    shared: list = []
    shared.append({"x": shared})
    return [loop_list, loop_dict, shared, [[[]]] * 1 + [_deep(70)]]


def _deep(levels: int):
    value: list = []
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("bad", _cycles())
def test_canonical__cycles_and_deep_values_are_ds209_and_the_encoder_stays_clean(bad):
    # The encoder keeps no circular-reference table (made once, shared by every call): a cycle
    # must be refused before it, and a refusal must leave nothing behind for the next call.
    with pytest.raises(PayloadNotEncodable) as err:
        codec.canonical_text_and_bytes(bad)
    assert err.value.code == "DS209"
    assert "deeper" in str(err.value)
    value = {"b": [1, {"c": None}], "a": "x"}
    assert codec.canonical_json(value) == _reference(value)
    assert codec.canonical_json(_deep(64)) == _reference(_deep(64))


class _Text(str):
    pass


class _OtherEnum(StrEnum):
    IDEMPOTENT = "idempotent"


@pytest.mark.parametrize("value", ["idempotent", "reconcile_before_retry",
                                   ProviderSafety.IDEMPOTENT, _Text("idempotent"),
                                   _OtherEnum.IDEMPOTENT])
def test_provider_safety__the_same_member_as_the_enum_call(value):
    assert provider_safety(value) is ProviderSafety(value)


@pytest.mark.parametrize("value", ["Idempotent", "", " idempotent", None, 1, b"idempotent",
                                   ["idempotent"]])
def test_provider_safety__refusals_unchanged(value):
    with pytest.raises(InvalidArgument) as err:
        provider_safety(value)
    assert "provider safety must be" in str(err.value)
