"""Arguments the runner commands share (process_schedules, process_work)."""

from __future__ import annotations


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (argparse turns the ValueError into a usage error)."""
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def add_runner_arguments(parser, *, lease_help: str) -> None:
    """--lease-owner, --lease-seconds and --loop, worded the same for both commands."""
    parser.add_argument("--lease-owner", default=None,
                        help="lease owner name (default host:pid)")
    parser.add_argument("--lease-seconds", type=positive_int, default=None, help=lease_help)
    parser.add_argument("--loop", action="store_true",
                        help="keep running passes until SIGTERM/SIGINT (docs/operations.md)")
