"""Ctrl-C (SIGINT) in ``process_schedules`` or ``sync_schedules`` run from the command line,
at a moment the command's own handling does not cover: one line on stderr saying what the
interrupt left, and exit status 130 (the shell's 128 + SIGINT), not a traceback
(docs/operations.md "Stopping").

Before ``handle()`` begins, Django parses the arguments and runs the system checks, which read
the database (the drift check) and can take a while on a loaded store: an interrupt there has
done nothing, and saying so is all an operator needs. ``call_command`` callers still get the
``KeyboardInterrupt`` itself (only ``run_from_argv``, the command line, is covered), and
``--traceback`` keeps the traceback, as Django's own errors do.
"""

from __future__ import annotations

import sys

from durable_schedule.runner.cli import INTERRUPTED_EXIT_CODE


class InterruptedBeforeStart:
    """Mixin, listed before ``BaseCommand`` (and before ``InterruptibleCommand``, whose own
    handling of a bounded run goes first). The command's ``handle()`` sets ``began`` first."""

    #: True once ``handle()`` began: from then on the command's own handling applies.
    began = False

    def interruption(self) -> str | None:
        """What an interrupt at this point left, said after "<command>: interrupted "; None
        lets the ``KeyboardInterrupt`` go on (the command's run handles it, or nobody)."""
        return None if self.began else "before it started: nothing was done"

    def run_from_argv(self, argv):
        self.began = False
        try:
            return super().run_from_argv(argv)
        except KeyboardInterrupt:
            said = None if "--traceback" in argv else self.interruption()
            if said is None:
                raise
            name = argv[1] if len(argv) > 1 else "command"
            sys.stderr.write(f"{name}: interrupted {said}\n")
            sys.stderr.flush()
            sys.exit(INTERRUPTED_EXIT_CODE)
