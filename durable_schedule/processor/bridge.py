"""The Work bridge: turns one occurrence into one accepted Work, exactly once
(docs/protocol/schedules.md "Transactions, security, and target bridge"; docs/protocol/schedules.md
rules S1 and S7).

The Work identity is derived from the immutable occurrence identity
``(scope_id, schedule_id, generation, kind, first_nominal_utc)`` and nothing else:

* work id: ``uuid5(WORK_ID_NAMESPACE, json([scope_id, schedule_id, generation, kind, first]))``
  (unique per scope, like every key: docs/protocol/storage.md);
* command: ``schedule:{schedule_id}:{generation}:{kind}:{first_nominal_iso}``; the suffix has a
  fixed shape, so the text is unambiguous even when ``schedule_id`` contains colons. A
  ``schedule_id`` too long for the 200-character command is replaced by ``~`` and the first 40
  hex digits of its SHA-256 (the Work id stays exact either way);
* idempotency key: ``occurrence:{work id}``.

A target with a relative deadline (``definition.target(..., deadline_after=...)``) gets its
absolute deadline from the instant the pass materializes the occurrence (the pass's cutoff,
PostgreSQL's clock): a coalesced occurrence that runs late still gets its full allowance.

A retry after a rollback therefore presents the same request to the Work runtime, which resolves
a duplicate to the Work already accepted; the occurrence link is compare-or-return: an unlinked
occurrence gets the accepted identity and state ``materialized``; a linked one returns its stored
tuple only when it equals the derived one, else ``OccurrenceLinkConflict`` (DS113).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property, lru_cache
from typing import Any

from durable_schedule.barriers import SCHEDULE_WORK_AFTER_ACCEPTANCE, barrier
from durable_schedule.errors import (
    DurableError,
    OccurrenceLinkConflict,
    PayloadNotEncodable,
    PayloadTooLarge,
    ScopeLost,
    WrongRole,
)
from durable_schedule.evaluation.isotext import utc_iso_us
from durable_schedule.frozen import maker
from durable_schedule.schedules.records import run
from durable_schedule.store.inspection import RUNTIME_ROLE
from durable_schedule.store.transactions import SCOPE_SETTING
from durable_schedule.work.enqueue import accept_in_scope
from durable_schedule.work.target import WorkTarget

#: Namespace of the deterministic Work ids of scheduled occurrences. Never change it: a retry
#: across a release must derive the same id.
WORK_ID_NAMESPACE = uuid.UUID("6f1d3c52-7f55-5a8e-9a43-5d2b1c0e8d11")
MAX_COMMAND = 200


@dataclass(frozen=True)
class OccurrenceIdentity:
    """The stable identity of an occurrence across processor retries
    (docs/protocol/schedules.md)."""

    scope_id: str
    schedule_id: str
    generation: int
    kind: str
    first_nominal_utc: datetime
    #: The row id when this transaction has just inserted the occurrence (pending, unlinked):
    #: the bridge then needs no read-back. Not part of the identity.
    fresh_id: int | None = field(default=None, compare=False)
    #: ``(current_user, scope setting)`` sampled by that insert: the runtime proof the bridge
    #: would otherwise read in a statement of its own. Not part of the identity.
    fresh_proof: tuple[str, str | None] | None = field(default=None, compare=False)

    @cached_property  # read three times per new occurrence (link, command, history detail)
    def first_iso(self) -> str:
        return utc_iso_us(self.first_nominal_utc)  # .astimezone(UTC).isoformat(microseconds)


@dataclass(frozen=True)
class WorkLink:
    """The target link stored on an occurrence: (work id, command, idempotency key)."""

    work_id: uuid.UUID
    command: str
    idempotency_key: str
    #: ``str(work_id)`` when the deriver had it already (a uuid's text costs more than its
    #: derivation's other parts): not part of the link, never compared.
    work_id_text: str | None = field(default=None, compare=False, repr=False)

    def work_id_str(self) -> str:
        return str(self.work_id) if self.work_id_text is None else self.work_id_text

    def as_dict(self) -> dict[str, str]:
        return {"work_id": self.work_id_str(), "command": self.command,
                "idempotency_key": self.idempotency_key}


#: ``WorkLink(work_id, command, idempotency_key, work_id_text)``, every field given
#: (durable_schedule/frozen.py: one per new occurrence).
_link = maker(WorkLink)


def derive_link(identity: OccurrenceIdentity) -> WorkLink:
    """The Work identity of an occurrence: a pure function of its identity."""
    work_id = _work_id(identity)
    suffix = f":{identity.generation}:{identity.kind}:{identity.first_iso}"
    name = identity.schedule_id
    if len("schedule:") + len(name) + len(suffix) > MAX_COMMAND:
        name = "~" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:40]
    text = str(work_id)
    return _link(work_id, f"schedule:{name}{suffix}", "occurrence:" + text, text)


def work_id_by_definition(identity: OccurrenceIdentity) -> uuid.UUID:
    """The work id exactly as the module docstring defines it: ``uuid5`` over the identity's
    compact JSON. :func:`_work_id` computes the same value with less work per occurrence;
    tests/schedules/test_work_identity.py proves the two equal."""
    material = json.dumps([identity.scope_id, identity.schedule_id, identity.generation,
                           identity.kind, identity.first_iso],
                          ensure_ascii=False, separators=(",", ":"))
    return uuid.uuid5(WORK_ID_NAMESPACE, material)


#: json.dumps(..., ensure_ascii=False) of one string, without building an encoder per call.
_json_text = json.encoder.encode_basestring  # type: ignore[attr-defined]


@lru_cache(maxsize=256)
def _scope_hash(scope_id: str):
    """SHA-1 fed with what every work id of the scope starts with: ``uuid5``'s namespace bytes
    and the identity JSON up to the schedule id (``["<scope_id>",``). Copied per occurrence."""
    state = hashlib.sha1(WORK_ID_NAMESPACE.bytes)
    state.update(("[" + _json_text(scope_id) + ",").encode("utf-8"))
    return state


def _work_id(identity: OccurrenceIdentity) -> uuid.UUID:
    """``work_id_by_definition`` from a per-scope hash state: ``uuid5(ns, name)`` is
    ``sha1(ns.bytes + name.encode())`` cut to 16 bytes with the version set, and ``name`` is
    the JSON array written out part by part (a list's compact JSON is its items' JSON joined
    by ","). A generation that is not a plain int, or a scope id that is not a str, takes the
    definition itself, so the value can never differ."""
    if type(identity.generation) is not int or type(identity.scope_id) is not str \
            or type(identity.schedule_id) is not str or type(identity.kind) is not str:
        return work_id_by_definition(identity)
    state = _scope_hash(identity.scope_id).copy()
    state.update((_json_text(identity.schedule_id) + "," + str(identity.generation) + ","
                  + _json_text(identity.kind) + "," + _json_text(identity.first_iso)
                  + "]").encode("utf-8"))
    return _uuid5_of(state.digest())


#: uuid.UUID(bytes=digest[:16], version=5) clears the variant and version bits and sets
#: them to RFC 4122 and 5; as two masks over the 128-bit integer.
_UUID5_CLEAR = ~((0xC000 << 48) | (0xF000 << 64))
_UUID5_SET = (0x8000 << 48) | (5 << 76)
_new_uuid = object.__new__
_set = object.__setattr__


def _uuid5_of(digest: bytes) -> uuid.UUID:
    """``uuid.UUID(bytes=digest[:16], version=5)`` without its constructor's argument checks
    (a third of the derivation's time): the same two slots ``UUID.__init__`` stores, the
    integer with the version and variant bits set as it sets them (tests/schedules/
    test_work_identity.py compares both for any digest)."""
    value = _new_uuid(uuid.UUID)
    _set(value, "int", (int.from_bytes(digest[:16], "big") & _UUID5_CLEAR) | _UUID5_SET)
    _set(value, "is_safe", uuid.SafeUUID.unknown)
    return value


def assert_runtime(cur, scope_id: str) -> None:
    """Prove the bridge runs as the runtime role in the expected scope (docs/protocol/schedules.md
    rule S7)."""
    cur.execute("select current_user, current_setting(%s, true)", [SCOPE_SETTING])
    user, scope = cur.fetchone()
    check_runtime(user, scope, scope_id)


def check_runtime(user: str, scope: str | None, scope_id: str) -> None:
    """The proof itself, on ``(current_user, scope setting)`` sampled in this transaction."""
    if user != RUNTIME_ROLE:
        raise WrongRole(f"the Work bridge must run as {RUNTIME_ROLE}, current_user is {user}")
    if scope != scope_id:
        raise ScopeLost("the Work bridge runs outside the occurrence's scope", scope=scope_id)


def _as_uuid(value: Any) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))


def _conflict(identity: OccurrenceIdentity, derived: WorkLink, stored: dict[str, Any],
              why: str) -> OccurrenceLinkConflict:
    return OccurrenceLinkConflict(
        f"occurrence link conflict: {why}", scope_id=identity.scope_id,
        schedule_id=identity.schedule_id, generation=identity.generation, kind=identity.kind,
        first_nominal_utc=identity.first_iso, derived=derived.as_dict(), stored=stored)


def link_conflict(identity: OccurrenceIdentity, derived: WorkLink) -> OccurrenceLinkConflict:
    """The guarded link write matched no row: someone linked the occurrence meanwhile."""
    return _conflict(identity, derived, {}, "the occurrence was linked concurrently")


#: ``context["refused"]`` of an error raised while the stored target was read into a Work
#: request: the stored row itself is refused (the same answer on every pass, nothing read from
#: the database), so the processor quarantines the schedule (docs/protocol/runner.md).
STORED_TARGET = "stored_target"


def target_refusal(error: DurableError) -> str:
    """The short cause a quarantine's evidence records for a refused stored target."""
    if isinstance(error, PayloadTooLarge):
        return "payload_too_large"
    if isinstance(error, PayloadNotEncodable):
        return "payload_not_encodable"
    return "invalid_target"


def stored_request(target_json: Any, derived: WorkLink, now: datetime,
                   due_at: datetime | None):
    """The Work request of an occurrence, from the generation's stored target. The target is
    validated again here, with this code's bounds: a row written by hand, or one a later
    release bounds more tightly (a payload over the Work cap, DS250; one the codec no longer
    encodes, DS209), raises its own DS error marked ``refused=stored_target``. This touches
    no database, so such an error is never transient."""
    try:
        return WorkTarget.from_json(target_json).to_request(
            command_id=derived.command, idempotency_key=derived.idempotency_key,
            work_id=derived.work_id, accepted_base=now, due_at=due_at)
    except DurableError as exc:
        exc.context["refused"] = STORED_TARGET
        exc.context.setdefault("reason", target_refusal(exc))
        raise


@dataclass(frozen=True)
class Bridged:
    link: WorkLink
    created: bool  # False: the stored link (or an already accepted Work) was returned
    #: The occurrence row whose link the caller still has to write (``write_link=False``):
    #: the same guarded write, in the caller's closing statement. None: nothing left to write.
    link_row: int | None = field(default=None, compare=False)


#: ``Bridged(link, created, link_row)``, every field given (durable_schedule/frozen.py): the
#: batched pass builds one per bridged occurrence (processor/batch.py, batch_work.py).
make_bridged = maker(Bridged)


def bridge(cur, identity: OccurrenceIdentity, target_json: Any, now: datetime, *,
           write_link: bool = True, due_at: datetime | None = None) -> Bridged:
    """Accept the occurrence's Work in this transaction and link it, compare-or-return.

    ``due_at``: when the Work becomes due (a jittered nominal instant); None: at once.
    ``write_link=False``: the guarded link write is left to the caller (``Bridged.link_row``),
    who must run the ``write link`` guard and raise ``link_conflict`` when it matches no row.
    """
    if identity.fresh_id is not None and identity.fresh_proof is not None:
        check_runtime(*identity.fresh_proof, identity.scope_id)
    else:
        assert_runtime(cur, identity.scope_id)
    derived = derive_link(identity)
    if identity.fresh_id is not None:
        row = (identity.fresh_id, "pending", None, None, None, None)
    else:
        row = run(cur, "lock_occurrence", {
            "scope_id": identity.scope_id, "schedule_id": identity.schedule_id,
            "generation": identity.generation, "kind": identity.kind,
            "first": identity.first_nominal_utc}).fetchone()
    if row is None:
        raise _conflict(identity, derived, {}, "the occurrence row is missing")
    occurrence_id, state, _last, work_id, command, key = row
    if work_id is not None:
        stored = WorkLink(_as_uuid(work_id), command, key)
        if stored != derived or state != "materialized":
            raise _conflict(identity, derived, {**stored.as_dict(), "state": state},
                            "the stored link differs from the derived Work identity")
        return Bridged(stored, created=False)
    if state != "pending":
        raise _conflict(identity, derived, {"state": state}, "the occurrence is not pending")
    request = stored_request(target_json, derived, now, due_at)
    accepted = accept_in_scope(cur, identity.scope_id, request,
                               source_occurrence_id=occurrence_id)
    barrier(SCHEDULE_WORK_AFTER_ACCEPTANCE)
    got = WorkLink(_as_uuid(accepted.work_id), accepted.command_id, accepted.idempotency_key)
    if got != derived:
        raise _conflict(identity, derived, got.as_dict(),
                        "the Work runtime returned a different Work identity")
    if not write_link:
        return Bridged(derived, created=bool(accepted.created), link_row=occurrence_id)
    run(cur, "write_link", {
        "scope_id": identity.scope_id, "id": occurrence_id, "work_id": derived.work_id,
        "command": derived.command, "idempotency_key": derived.idempotency_key, "now": now})
    if cur.rowcount != 1:
        raise link_conflict(identity, derived)
    return Bridged(derived, created=bool(accepted.created))
