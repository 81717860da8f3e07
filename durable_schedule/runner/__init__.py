"""The runner: ``--loop`` mode of the commands (docs/architecture.md "runner",
docs/protocol/runner.md)."""
