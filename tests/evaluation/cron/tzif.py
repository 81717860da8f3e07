"""Write a minimal TZif v2 file (RFC 8536) for the tz-rules seam: no stored transitions, one
time type, and a POSIX TZ footer that carries the rules (e.g. ``CET-1CEST,M3.5.0,M10.5.0/3``).
A modified footer simulates a tz database update for one zone."""

from __future__ import annotations

import struct


def tzif_bytes(footer: str, std_offset: int, abbreviation: str) -> bytes:
    abbr = abbreviation.encode() + b"\0"

    def block(time_size: int) -> bytes:
        header = b"TZif2" + b"\0" * 15 + struct.pack(">6l", 0, 0, 0, 0, 1, len(abbr))
        return header + struct.pack(">lBB", std_offset, 0, 0) + abbr

    return block(4) + block(8) + b"\n" + footer.encode() + b"\n"


def write_tzif(path, footer: str, std_offset: int, abbreviation: str) -> str:
    with open(path, "wb") as f:
        f.write(tzif_bytes(footer, std_offset, abbreviation))
    return str(path)
