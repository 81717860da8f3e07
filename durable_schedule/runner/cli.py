"""Arguments the runner commands share (process_schedules, process_work)."""

from __future__ import annotations

import argparse


def _refused(what: str, text: str) -> argparse.ArgumentTypeError:
    # argparse prints "argument --NAME: <this>" and exits 2: the option, the code, the value
    return argparse.ArgumentTypeError(f"DS406: must be {what}, got {text!r}")


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1 (else a usage error with DS406)."""
    try:
        value = int(text)
    except ValueError:
        raise _refused("a whole number >= 1", text) from None
    if value < 1:
        raise _refused("a whole number >= 1", text)
    return value


def whole_number(text: str) -> int:
    """argparse type: a whole number (its range is the command's own check, with its code)."""
    try:
        return int(text)
    except ValueError:
        raise _refused("a whole number", text) from None


def seconds(text: str) -> float:
    """argparse type: a number of seconds (its range is the command's own check)."""
    try:
        return float(text)
    except ValueError:
        raise _refused("a number of seconds", text) from None


def add_runner_arguments(parser, *, lease_help: str) -> None:
    """--lease-owner, --lease-seconds and --loop, worded the same for both commands."""
    parser.add_argument("--lease-owner", default=None,
                        help="lease owner name (default host:pid)")
    parser.add_argument("--lease-seconds", type=positive_int, default=None, help=lease_help)
    parser.add_argument("--loop", action="store_true",
                        help="keep running passes until SIGTERM/SIGINT (docs/operations.md)")
