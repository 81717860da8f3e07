"""``Cron(expression, tz="UTC", *, dst_gap="shift", dst_fold="first")``: the cron spec, its
binding to a schedule identity and acceptance instant, and its persisted JSON form.

A spec the user writes carries the expression, the zone and the DST policy. When a command
accepts it, ``bind()`` adds what makes the generation reproducible: the ``H`` seed of
``(scope, schedule_id)`` (seed.py) and the zone's rules snapshot at acceptance (zones.py). The
generation persists all of it with grammar ``cronos-v1`` and evaluator ``ds-cron-v1``; stored
data that does not have exactly that shape is refused (DS114) and the schedule quarantined.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from durable_schedule.errors import (
    CronIdentityRequired,
    InvalidDstPolicy,
    InvalidScheduleSpec,
    ScheduleError,
    TimeZoneUnavailable,
    UnevaluableGeneration,
    UnknownTimeZone,
)
from durable_schedule.evaluation.cron.evaluator import (
    DST_FOLD_POLICIES,
    DST_GAP_POLICIES,
    EVALUATOR_VERSION,
    Evaluator,
)
from durable_schedule.evaluation.cron.parser import GRAMMAR_VERSION, CronPattern, parse
from durable_schedule.evaluation.cron.seed import SEED_BITS, seed_for
from durable_schedule.evaluation.cron.zones import (
    FINGERPRINT_VERSION,
    TzRules,
    fingerprint_of,
    load,
    rules_at,
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Cron:
    """Instants of a Cronos cron expression in an IANA zone (docs/schedules.md "Cron").

    ``h_seed`` and ``tz_rules`` are filled in when a command accepts the spec; leave them out.
    """

    expression: str
    tz: str = "UTC"
    _: KW_ONLY
    dst_gap: str = "shift"
    dst_fold: str = "first"
    h_seed: int | None = None
    tz_rules: TzRules | None = field(default=None, compare=False, repr=False)
    _pattern: CronPattern = field(init=False, compare=False, repr=False, default=None)

    def __post_init__(self) -> None:
        if self.dst_gap not in DST_GAP_POLICIES or not isinstance(self.dst_gap, str):
            raise InvalidDstPolicy("dst_gap must be 'shift' or 'skip'", field="dst_gap",
                                   value=repr(self.dst_gap)[:80])
        if self.dst_fold not in DST_FOLD_POLICIES or not isinstance(self.dst_fold, str):
            raise InvalidDstPolicy("dst_fold must be 'first' or 'second'", field="dst_fold",
                                   value=repr(self.dst_fold)[:80])
        seed = self.h_seed
        if seed is not None and (type(seed) is not int or not 0 <= seed < 2 ** SEED_BITS):
            raise InvalidScheduleSpec("h_seed must be an unsigned 64-bit int", field="h_seed")
        object.__setattr__(self, "_pattern", parse(self.expression, seed))
        zone = load(self.tz)
        rules = self.tz_rules
        if rules is not None and (not isinstance(rules, TzRules) or rules.zone != zone.name):
            raise InvalidScheduleSpec("tz_rules do not belong to this zone", field="tz_rules")

    @property
    def pattern(self) -> CronPattern:
        return self._pattern

    @property
    def interval(self) -> bool:
        """Cronos's classification: True when the autumn repeat runs in both passes."""
        return self._pattern.interval

    def evaluator(self) -> Evaluator:
        """The evaluator with the current zone rules; DS128 for ``H`` without a seed."""
        if self._pattern.uses_h and self.h_seed is None:
            raise CronIdentityRequired("the expression uses H and has no seed",
                                       expression=self.expression)
        return Evaluator(self._pattern, load(self.tz), self.dst_gap, self.dst_fold)


def _second(value: datetime) -> int:
    return (value - _EPOCH) // timedelta(seconds=1)


def with_seed(spec: Cron, scope: str, schedule_id: str) -> Cron:
    """``spec`` with the ``H`` seed of the identity (the preview's binding)."""
    return Cron(spec.expression, spec.tz, dst_gap=spec.dst_gap, dst_fold=spec.dst_fold,
                h_seed=seed_for(scope, schedule_id), tz_rules=spec.tz_rules)


def bind(spec: Cron, scope: str, schedule_id: str, accepted_at: datetime) -> Cron:
    """The spec a generation accepted at ``accepted_at`` persists: seed and rules snapshot."""
    zone = load(spec.tz)
    rules = rules_at(zone, _second(accepted_at))
    return Cron(spec.expression, spec.tz, dst_gap=spec.dst_gap, dst_fold=spec.dst_fold,
                h_seed=seed_for(scope, schedule_id), tz_rules=rules)


def to_json(spec: Cron) -> dict[str, Any]:
    rules = None if spec.tz_rules is None else spec.tz_rules.to_json()
    return {"grammar": GRAMMAR_VERSION, "expression": spec.expression, "tz": spec.tz,
            "dst_gap": spec.dst_gap, "dst_fold": spec.dst_fold, "h_seed": spec.h_seed,
            "tz_rules": rules}


KEYS = frozenset({"grammar", "expression", "tz", "dst_gap", "dst_fold", "h_seed", "tz_rules"})
_RULE_KEYS = frozenset({"version", "zone", "from", "to", "offset", "changes", "fingerprint"})


def _int(value: Any) -> bool:
    return type(value) is int


def _rules_from_json(data: Any, bad) -> TzRules:
    if not isinstance(data, dict) or set(data) != _RULE_KEYS:
        raise bad("bad_tz_rules", f"tz_rules keys must be exactly {sorted(_RULE_KEYS)}")
    if data["version"] != FINGERPRINT_VERSION:
        raise bad("unknown_tz_fingerprint_version", "tz_rules version is not known")
    if not all(_int(data[k]) for k in ("from", "to", "offset")) or \
            not isinstance(data["zone"], str) or not isinstance(data["fingerprint"], str):
        raise bad("bad_tz_rules", "tz_rules fields have the wrong types")
    changes = data["changes"]
    if not isinstance(changes, list) or not all(
            isinstance(c, list) and len(c) == 2 and _int(c[0]) and _int(c[1]) for c in changes):
        raise bad("bad_tz_rules", "tz_rules changes must be [second, offset] pairs")
    pairs = tuple((c[0], c[1]) for c in changes)
    if fingerprint_of(data["from"], data["to"], data["offset"], pairs) != data["fingerprint"]:
        # The hash covers the stored list, so an edited list or hash is caught here.
        raise bad("tz_rules_tampered", "tz_rules fingerprint does not match its changes")
    return TzRules(data["zone"], data["from"], data["to"], data["offset"], pairs,
                   data["fingerprint"])


def from_json(data: Any, bad) -> Cron:
    """Strictly rebuild a stored cron spec; ``bad(reason, detail)`` builds the DS114 error."""
    if not isinstance(data, dict):
        raise bad("not_an_object", "spec data is not a JSON object")
    if set(data) != KEYS:
        raise bad("wrong_keys", f"cron spec keys must be exactly {sorted(KEYS)}")
    if data["grammar"] != GRAMMAR_VERSION:
        raise bad("unknown_grammar_version", f"cron grammar is not {GRAMMAR_VERSION}")
    if data["h_seed"] is None or data["tz_rules"] is None:
        raise bad("unbound_cron", "a stored cron spec needs its H seed and tz rules")
    if not all(isinstance(data[k], str) for k in ("expression", "tz", "dst_gap", "dst_fold")):
        raise bad("bad_field", "cron spec text fields must be strings")
    rules = _rules_from_json(data["tz_rules"], bad)
    try:
        return Cron(data["expression"], data["tz"], dst_gap=data["dst_gap"],
                    dst_fold=data["dst_fold"], h_seed=data["h_seed"], tz_rules=rules)
    except ScheduleError as exc:
        if isinstance(exc, UnevaluableGeneration):
            raise
        if (isinstance(exc, UnknownTimeZone) and "cause" in exc.context
                and rules.zone == data["tz"]):
            # A consistent stored spec (its rules snapshot, fingerprint verified above, was
            # taken of this very zone at acceptance) whose zone no longer loads: the tz
            # database changed under the schedule, the spec did not (DS160, not DS114).
            base = bad("tz_unavailable", exc.message)
            raise TimeZoneUnavailable(
                f"stored cron spec names time zone {data['tz'][:80]!r}, which the installed "
                "tz database no longer has", **base.context, tz=data["tz"][:80],
                cause=exc.context["cause"]) from exc
        raise bad("invalid_spec", exc.message) from exc


__all__ = ["Cron", "EVALUATOR_VERSION", "GRAMMAR_VERSION", "bind", "from_json", "to_json",
           "with_seed"]
