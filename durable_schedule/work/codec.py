"""Payload and result codecs, and the canonical JSON form the fingerprint hashes (issue 3, item 1).

A Work payload is stored as ``jsonb`` and hashed into the enqueue fingerprint, so it must have one
canonical byte form. ``canonical_json`` is that form: keys sorted, no whitespace, UTF-8, no NaN or
infinity, string keys only, and no NUL character (``jsonb`` cannot store ``\\u0000``). A value that
does not fit raises ``PayloadNotEncodable`` (DS209) before anything is written.

A *codec* turns a domain value into such a JSON value (``encode``) and back (``decode``). The
default :class:`JsonCodec` accepts plain JSON values. The canonical bytes are pinned by a test:
changing them would make identical duplicates conflict (docs/protocol/work.md, "Identity and outcome
truth").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from durable_schedule.errors import PayloadNotEncodable, PayloadTooLarge

_MAX_DEPTH = 64
#: The largest canonical JSON (UTF-8 bytes) a payload or result may have (DS250). PostgreSQL
#: refuses a ``jsonb`` value -- one string, or the whole document -- above 268,435,455 bytes,
#: and the binary form of a JSON text can be about six times the text (an array of one-digit
#: numbers). At 32 MiB every value that passes is storable, so a larger one is refused here,
#: before anything is written, instead of failing the caller's statement (or an outcome's group
#: commit) with a database error.
MAX_JSON_BYTES = 32 * 1024 * 1024
#: The default ``limit`` of the functions below: :data:`MAX_JSON_BYTES` as it is when called
#: (not as it was when this module was imported), so every bound reads the one constant.
CAP: Any = object()


@runtime_checkable
class Codec(Protocol):
    """Turns a domain value into a JSON value and back. Both directions must be deterministic."""

    def encode(self, value: Any) -> Any: ...

    def decode(self, data: Any) -> Any: ...


class JsonCodec:
    """The default codec: the payload already is a JSON value (dict, list, str, int, ...)."""

    def encode(self, value: Any) -> Any:
        return json_value(value, "payload")

    def decode(self, data: Any) -> Any:
        return data

    def __repr__(self) -> str:
        return "JsonCodec()"


#: The codec a definition uses when it names none.
JSON = JsonCodec()


def written_out_length(number: int | float) -> int:
    """The characters PostgreSQL writes for ``number`` when it reads a ``jsonb`` back: a
    ``numeric`` is written positionally, so a float whose JSON form has an exponent grows --
    ``1e+308`` (6 characters, a few bytes stored) reads back as 309 digits, ``5e-324`` as 326
    characters. (``-0.0`` reads back as ``0.0``: one less, never more.)"""
    text = repr(number) if isinstance(number, bool | int) else float.__repr__(number)
    mantissa, marker, exponent = text.partition("e")
    if not marker:
        return len(text)
    power = int(exponent)
    digits = sum(ch.isdigit() for ch in mantissa)
    if power >= 0:  # the digits, zeros up to the units, and any fraction left after them
        written = max(digits, power + 1) + (1 if digits > power + 1 else 0)
    else:  # "0." then zeros, then the digits
        written = 1 - power + digits
    return written + text.startswith("-")


def _check(value: Any, field: str, depth: int = 0, grows: list[int] | None = None) -> None:
    """Refuse what JSON or ``jsonb`` cannot hold; ``grows[0]`` gains how much longer the
    value's floats read back than they are written in its canonical text."""
    if depth > _MAX_DEPTH:
        raise PayloadNotEncodable(f"{field} nests deeper than {_MAX_DEPTH} levels")
    if value is None or isinstance(value, bool | int):
        return
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise PayloadNotEncodable(f"{field} contains NaN or infinity")
        if grows is not None and (abs(value) >= 1e16 or 0.0 < abs(value) < 1e-4):
            # Written with an exponent in JSON (Python's repr switches there), positionally
            # by PostgreSQL: count the difference against the size bound.
            grows[0] += written_out_length(value) - len(float.__repr__(value))
        return
    if isinstance(value, str):
        if "\x00" in value:
            raise PayloadNotEncodable(f"{field} contains a NUL character, which jsonb refuses")
        return
    if isinstance(value, list | tuple):
        for item in value:
            _check(item, field, depth + 1, grows)
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise PayloadNotEncodable(f"{field} has a non-string key", key=repr(key))
            _check(key, field, depth + 1)
            _check(item, field, depth + 1, grows)
        return
    raise PayloadNotEncodable(f"{field} contains a value JSON cannot hold",
                              type=type(value).__name__)


#: The canonical form's encoder, made once: ``json.dumps`` with these options builds the same
#: encoder on every call (its construction cost about as much as encoding a small payload). An
#: encoder keeps no state between calls, so one instance serves every thread.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              allow_nan=False)
try:  # the C encoder JSONEncoder.encode builds anew on every call, made once here
    from json.encoder import c_encode_basestring as _c_string
    from json.encoder import c_make_encoder as _c_make_encoder
except ImportError:  # pragma: no cover - CPython without its _json accelerator
    _c_make_encoder = None
#: ``_CANONICAL.encode`` without its per-call set-up: the same C encoder, options and string
#: escaping, but no circular-reference table (``markers=None``), so it keeps no state between
#: calls. A cycle cannot reach it: :func:`_check` runs first and refuses any value nesting
#: deeper than ``_MAX_DEPTH`` (DS209), which every cycle does. None without the accelerator.
_ENCODE_CHUNKS = None if _c_make_encoder is None or _c_string is None else _c_make_encoder(
    None, _CANONICAL.default, _c_string, None, _CANONICAL.key_separator,
    _CANONICAL.item_separator, True, False, False)
#: The C scanner behind ``json.loads``, without its whitespace skipping and trailing-data check:
#: canonical text has no whitespace outside strings and is one complete value.
_SCAN = json.JSONDecoder().scan_once


def canonical_text_and_bytes(value: Any, field: str = "payload", *,
                             limit: int | None = CAP) -> tuple[str, bytes]:
    """The canonical JSON text of ``value`` (sorted keys, compact, UTF-8 safe) and its UTF-8
    bytes (the encoding that proves the text UTF-8 safe is the one the fingerprint hashes).
    More than ``limit`` bytes raise PayloadTooLarge (DS250); ``None`` for values that are
    not stored as one ``jsonb`` (a hash key)."""
    if limit is CAP:
        limit = MAX_JSON_BYTES
    grows = [0]
    _check(value, field, 0, grows)
    try:
        text = _CANONICAL.encode(value) if _ENCODE_CHUNKS is None else "".join(
            _ENCODE_CHUNKS(value, 0))
        data = text.encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError) as exc:
        raise PayloadNotEncodable(f"{field} is not encodable as JSON: {exc}") from None
    if limit is not None and len(data) > limit:
        raise PayloadTooLarge(f"{field} is {len(data)} bytes of canonical JSON, more than "
                              f"the {limit} a Work can store", size=len(data), limit=limit)
    if limit is not None and len(data) + grows[0] > limit:
        # Stored small, but read back as text larger than the bound (past 1 GB PostgreSQL
        # cannot give it back at all): every read of the row -- work.get, the worker's claim
        # -- would fail on it.
        size = len(data) + grows[0]
        raise PayloadTooLarge(f"{field} is {len(data)} bytes of canonical JSON but {size} as "
                              "PostgreSQL writes its numbers back out (a float like 1e+308 "
                              f"reads back as 309 digits), more than the {limit} a Work can "
                              "store: send such numbers as strings", size=size, limit=limit)
    return text, data


def canonical_json(value: Any, field: str = "payload", *,
                   limit: int | None = CAP) -> str:
    """The canonical JSON text of ``value`` (sorted keys, compact, UTF-8 safe)."""
    return canonical_text_and_bytes(value, field, limit=limit)[0]


def canonical_bytes(value: Any, field: str = "payload") -> bytes:
    """The bytes the enqueue fingerprint hashes for a payload."""
    return canonical_text_and_bytes(value, field)[1]


def from_canonical(text: str) -> Any:
    """The value of a text :func:`canonical_json` made: what ``json.loads`` gives for it."""
    return _SCAN(text, 0)[0]


def json_value(value: Any, field: str = "payload", *,
               limit: int | None = CAP) -> Any:
    """A detached copy of ``value`` as plain JSON types (tuples become lists)."""
    return from_canonical(canonical_json(value, field, limit=limit))


def loads(data: Any) -> Any:
    """A ``jsonb`` column as read through Django's cursor (text) or psycopg (already decoded)."""
    if isinstance(data, str | bytes | bytearray):
        return json.loads(data)
    return data
