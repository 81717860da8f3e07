"""Arguments the runner commands share (process_schedules, process_work)."""

from __future__ import annotations

import argparse
import sys

from durable_schedule.runner import committed


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


#: The exit status of a bounded run stopped by Ctrl-C (SIGINT): the shell's 128 + 2.
INTERRUPTED_EXIT_CODE = 130


class InterruptibleCommand:
    """A mixin for the runner commands: Ctrl-C (``KeyboardInterrupt``) during a run from the
    command line ends it with one line on stderr -- what the interrupt left behind and the
    counts committed before it -- and exit status 130, not a traceback (docs/operations.md
    "Stopping"). ``call_command`` callers still get the ``KeyboardInterrupt`` itself, so an
    interrupt of their program is never swallowed. Only a bounded run (no ``--loop``): the
    command sets ``bounded_run`` when it starts one."""

    #: What the interrupted run leaves behind, said after "<command>: interrupted: ".
    interrupted_leaves = ""
    #: Set by the command's ``handle`` when it runs without ``--loop``.
    bounded_run = False

    def run_from_argv(self, argv):
        try:
            return super().run_from_argv(argv)
        except KeyboardInterrupt as exc:
            # Not under --loop (there SIGINT is a graceful stop, and an executor's own
            # interrupt ends the process as an uncaught one does), nor before the command
            # began its run, nor with --traceback (asked for, as Django's own does for errors).
            if not getattr(self, "bounded_run", False) or "--traceback" in argv:
                raise
            done = committed.of(exc)
            counts = " ".join(f"{name}={value}" for name, value in done.items())
            name = argv[1] if len(argv) > 1 else "command"
            sys.stderr.write(f"{name}: interrupted: {self.interrupted_leaves}"
                             f" (committed before it: {counts or 'nothing'})\n")
            sys.stderr.flush()
            sys.exit(INTERRUPTED_EXIT_CODE)
