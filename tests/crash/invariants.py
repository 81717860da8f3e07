"""The crash-proof invariants, checked against the whole store after recovery.

The oracle is independent of the processor: the nominal instants of each schedule are computed
here from the persisted generation (``anchor + k·interval``, ``accepted_at + delay``, ``at``),
and the expected Work identity of each occurrence from the documented derivation
(docs/schedules.md, ``durable_schedule/processor/bridge.py``), re-implemented here with its
pinned namespace: a change of the product's derivation is a broken promise ("a retry across a
release must derive the same id"), and this suite must notice it rather than follow it.

Invariants (docs/reliability.md):

I1. Exactly one occurrence per identity ``(scope, schedule, generation, kind, first)``.
I2. Coverage: the occurrences' ranges ``[first, last]`` cover every nominal instant in
    ``(accepted_at, cursor]`` exactly once (no gap, no overlap, nothing past the cursor).
I3. Cursor: ``cursor`` equals the last nominal instant covered (``accepted_at`` while none is),
    and, when ``settled``, every instant due at the database clock is covered (an active
    schedule's cursor is the last instant at or before ``now``).
I4. Exactly one Work per occurrence: every materialized occurrence links the Work derived from
    its identity, that Work exists and names the occurrence as its source; no Work without one;
    a nominal or recovery occurrence is never committed without its Work (only a coalesced one
    waits, pending, for the slot).
I5. Effects: ``reconcile_before_retry`` Work performed its effect at most once (exactly once
    when it succeeded); ``idempotent`` Work at most once per admitted permit.
I6. When ``settled``: every Work succeeded, no lease is held, no pending occurrence is left.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db import connection

US = timedelta(microseconds=1)
#: The bridge's Work id namespace (never changes, see durable_schedule/processor/bridge.py).
WORK_ID_NAMESPACE = uuid.UUID("6f1d3c52-7f55-5a8e-9a43-5d2b1c0e8d11")
MAX_COMMAND = 200
IDEMPOTENT = "idempotent"
RECONCILE = "reconcile_before_retry"


def rows(sql: str, params=()) -> list[tuple]:
    """Read as the migration owner (row-level security does not apply to it in development)."""
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall()


def _json(value):
    return json.loads(value) if isinstance(value, str) else value


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def expected_link(scope: str, schedule: str, generation: int, kind: str,
                  first: datetime) -> tuple[uuid.UUID, str, str]:
    """(work id, command, idempotency key) of an occurrence, as the bridge must derive them."""
    first_iso = first.astimezone(UTC).isoformat(timespec="microseconds")
    material = json.dumps([scope, schedule, generation, kind, first_iso], ensure_ascii=False,
                          separators=(",", ":"))
    work_id = uuid.uuid5(WORK_ID_NAMESPACE, material)
    suffix = f":{generation}:{kind}:{first_iso}"
    name = schedule
    if len("schedule:") + len(name) + len(suffix) > MAX_COMMAND:
        name = "~" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:40]
    return work_id, f"schedule:{name}{suffix}", f"occurrence:{work_id}"


def nominal_instants(kind: str, spec: dict, accepted_at: datetime,
                     upto: datetime) -> list[datetime]:
    """The nominal instants in ``(accepted_at, upto]`` (docs/protocol/schedules.md rule S2),
    computed independently."""
    if kind == "at":
        when = _utc(spec["at"])
        return [when] if accepted_at < when <= upto else []
    if kind == "after":
        when = accepted_at + spec["delay_us"] * US
        return [when] if when <= upto else []
    assert kind == "every", kind
    interval = spec["interval_us"] * US
    anchor = accepted_at if spec.get("anchor") is None else _utc(spec["anchor"])
    k = 0
    if anchor <= accepted_at:
        k = (accepted_at - anchor) // interval + 1
    out = []
    instant = anchor + k * interval
    while instant <= upto:
        out.append(instant)
        instant += interval
    return out


def has_more_instants(kind: str, spec: dict, accepted_at: datetime, after: datetime) -> bool:
    """Whether the spec has a nominal instant later than ``after`` (At and After have one)."""
    if kind == "every":
        return True
    only = _utc(spec["at"]) if kind == "at" else accepted_at + spec["delay_us"] * US
    return only > after


@dataclass
class Report:
    """What the store holds after recovery, and what was wrong with it."""

    schedules: int = 0
    states: Counter = field(default_factory=Counter)
    instants_covered: int = 0
    occurrences: Counter = field(default_factory=Counter)
    works: Counter = field(default_factory=Counter)
    safety: Counter = field(default_factory=Counter)
    effects: int = 0
    duplicate_occurrences: int = 0
    duplicate_works: int = 0
    duplicate_effects: int = 0
    permits: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)

    def problem(self, text: str) -> None:
        self.problems.append(text)

    def summary(self) -> dict:
        return {
            "schedules": self.schedules, "schedule_states": dict(self.states),
            "instants_covered": self.instants_covered,
            "occurrences": dict(self.occurrences), "works": dict(self.works),
            "works_by_safety": dict(self.safety), "effects": self.effects,
            "permits": dict(self.permits),
            "duplicate_occurrences": self.duplicate_occurrences,
            "duplicate_works": self.duplicate_works,
            "duplicate_effects": self.duplicate_effects, "problems": len(self.problems),
        }

    def assert_clean(self) -> None:
        shown = "\n".join(self.problems[:40])
        more = len(self.problems) - 40
        assert not self.problems, (
            f"{len(self.problems)} invariant violations"
            f"{f' (first 40, {more} more)' if more > 0 else ''}:\n{shown}\n{self.summary()}")


def check(*, settled: bool = True, now: datetime | None = None,
          allow_suspended: frozenset[str] = frozenset()) -> Report:
    """Check I1-I6 over the whole store; ``now`` defaults to the database clock.

    ``allow_suspended`` names the ``scope/schedule`` a test suspends on purpose: their instants
    after the unmoved cursor are left uncovered by design (docs/protocol/schedules.md rule S3).
    """
    report = Report()
    if now is None:
        now = rows("select durable_schedule_clock('clock')")[0][0]
    definitions = rows(
        "select d.scope_id, d.schedule_id, d.state, d.cursor_utc, d.active_generation,"
        "       g.kind, g.spec::text, g.accepted_at_utc"
        "  from durable_schedule_definition d"
        "  join durable_schedule_generation g on g.scope_id = d.scope_id"
        "   and g.schedule_id = d.schedule_id and g.generation = d.active_generation")
    occurrences = defaultdict(list)
    for row in rows("select scope_id, schedule_id, generation, kind, first_nominal_utc,"
                    "       last_nominal_utc, state, work_id, work_command,"
                    "       work_idempotency_key, id"
                    "  from durable_schedule_occurrence order by first_nominal_utc, id"):
        occurrences[(row[0], row[1])].append(row)
    works = {}
    for w in rows("select w.scope_id, w.work_id, w.state, w.provider_safety,"
                  "       w.source_occurrence_id, w.command_id, w.idempotency_key,"
                  "       (select count(*) from durable_work_permit p"
                  "         where p.scope_id = w.scope_id and p.work_id = w.work_id)"
                  "  from durable_work w"):
        if (w[0], w[1]) in works:
            report.duplicate_works += 1
            report.problem(f"I4 duplicate Work {w[0]}/{w[1]}")
        works[(w[0], w[1])] = w
    effects = Counter(uuid.UUID(str(r[0])) for r in rows("select work_id from demo_effect"))
    report.effects = sum(effects.values())

    identities = rows("select count(*) - count(distinct (scope_id, schedule_id, generation,"
                      " kind, first_nominal_utc)) from durable_schedule_occurrence")[0][0]
    report.duplicate_occurrences = identities
    if identities:
        report.problem(f"I1 {identities} duplicate occurrence identities")

    linked: dict[tuple, tuple] = {}
    for scope, schedule, state, cursor, generation, kind, spec_text, accepted in definitions:
        report.schedules += 1
        report.states[state] += 1
        _check_schedule(report, now, settled, scope, schedule, state, cursor, generation, kind,
                        _json(spec_text), accepted, occurrences.get((scope, schedule), []),
                        works, linked, allow_suspended)

    for key, w in works.items():
        scope, work_id, state, safety, source, *_rest, permits = w
        report.works[state] += 1
        report.safety[safety] += 1
        report.permits[permits] += 1
        if key not in linked:
            report.problem(f"I4 Work {scope}/{work_id} ({state}) is linked by no occurrence")
        elif linked[key][10] != source:
            report.problem(f"I4 Work {scope}/{work_id} names occurrence {source}, "
                           f"linked by {linked[key][10]}")
        done = effects.get(uuid.UUID(str(work_id)), 0)
        if safety == RECONCILE:
            if done > 1:
                report.duplicate_effects += done - 1
                report.problem(f"I5 reconcile_before_retry Work {work_id} performed its effect "
                               f"{done} times")
            if state == "succeeded" and done != 1:
                report.problem(f"I5 Work {work_id} succeeded with {done} effects")
        elif done > permits:
            report.problem(f"I5 Work {work_id}: {done} effects from {permits} permits")
        if settled and state != "succeeded":
            report.problem(f"I6 Work {scope}/{work_id} ended {state}, not succeeded")
    orphans = set(effects) - {uuid.UUID(str(k[1])) for k in works}
    if orphans:
        report.problem(f"I5 effects of unknown Work: {sorted(map(str, orphans))[:5]}")

    if settled:
        held = rows("select (select count(*) from durable_schedule_dispatch"
                    "         where lease_owner is not null),"
                    "       (select count(*) from durable_work_dispatch)")[0]
        if held != (0, 0):
            report.problem(f"I6 leases or Work dispatch rows left: {held}")
    return report


def _check_schedule(report: Report, now, settled, scope, schedule, state, cursor, generation,
                    kind, spec, accepted, found, works, linked, allow_suspended) -> None:
    name = f"{scope}/{schedule}"
    due = nominal_instants(kind, spec, accepted, now)
    upto_cursor = [i for i in due if i <= cursor]
    # I3: the cursor is the last instant covered (or the acceptance instant).
    expected_cursor = upto_cursor[-1] if upto_cursor else accepted
    if cursor != expected_cursor:
        report.problem(f"I3 {name}: cursor {cursor} is not the last instant at or before it "
                       f"({expected_cursor})")
    live = [o for o in found if o[6] not in ("superseded", "canceled")]
    covered: list[datetime] = []
    for o in live:
        _g, okind, first, last, ostate = o[2], o[3], o[4], o[5], o[6]
        report.occurrences[f"{okind}/{ostate}"] += 1
        if o[2] != generation:
            report.problem(f"I2 {name}: occurrence of generation {o[2]} (active {generation})")
        span = [i for i in due if first <= i <= last]
        if not span or span[0] != first or span[-1] != last:
            report.problem(f"I2 {name}: {okind} occurrence [{first}, {last}] does not start "
                           f"and end on due nominal instants")
        if last > cursor:
            report.problem(f"I2 {name}: {okind}/{ostate} occurrence [{first}, {last}] lies past "
                           f"the cursor {cursor}")
        covered.extend(span)
        _check_link(report, name, scope, schedule, o, works, linked)
    counts = Counter(covered)
    twice = sorted(i for i, n in counts.items() if n > 1)
    if twice:
        report.problem(f"I2 {name}: instants covered more than once: {twice[:3]}")
    missing = sorted(set(upto_cursor) - set(counts))
    if missing:
        report.problem(f"I2 {name}: instants behind the cursor never covered: {missing[:3]}")
    report.instants_covered += len(set(counts) & set(upto_cursor))
    if not settled:
        return
    if state in ("active", "completed"):
        left = [i for i in due if i > cursor]
        if left:
            report.problem(f"I3 {name} ({state}): {len(left)} due instants not covered, "
                           f"first {left[0]} (cursor {cursor}, now {now})")
    if state == "completed" and has_more_instants(kind, spec, accepted, cursor):
        report.problem(f"I3 {name}: completed with instants left after {cursor}")
    if state == "active" and kind != "every" and not has_more_instants(kind, spec, accepted,
                                                                         cursor):
        report.problem(f"I3 {name}: still active although its only instant is covered")
    if state == "suspended" and name not in allow_suspended:
        report.problem(f"I3 {name}: suspended (expected only where a test asks for it)")
    for o in live:
        if o[6] not in ("materialized", "skipped"):
            report.problem(f"I6 {name}: occurrence [{o[4]}, {o[5]}] left {o[6]}")


def _check_link(report: Report, name, scope, schedule, o, works, linked) -> None:
    generation, okind, first, ostate, work_id = o[2], o[3], o[4], o[6], o[7]
    if work_id is None:
        if ostate == "materialized":
            report.problem(f"I4 {name}: materialized {okind} occurrence {first} has no Work")
        elif okind != "coalesced" and ostate != "skipped":
            # Nominal and recovery occurrences are inserted and bridged in one transaction: no
            # committed state, not even right after a crash, shows one without its Work.
            report.problem(f"I4 {name}: {okind} occurrence {first} is {ostate} without Work")
        return
    expected = expected_link(scope, schedule, generation, okind, first)
    got = (uuid.UUID(str(work_id)), o[8], o[9])
    if got != expected:
        report.problem(f"I4 {name}: occurrence {okind} {first} links {got}, derived {expected}")
    if ostate != "materialized":
        report.problem(f"I4 {name}: linked occurrence {first} is {ostate}")
    key = (scope, work_id)
    if key in linked:
        report.problem(f"I4 {name}: Work {work_id} linked by two occurrences")
    linked[key] = o
    w = works.get(key)
    if w is None:
        report.problem(f"I4 {name}: occurrence {okind} {first} links missing Work {work_id}")
    elif (w[5], w[6]) != (o[8], o[9]):
        report.problem(f"I4 {name}: Work {work_id} has command/key {w[5]}/{w[6]}, "
                       f"the link says {o[8]}/{o[9]}")
