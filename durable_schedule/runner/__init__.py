"""The runner: ``--loop`` mode of the commands (DESIGN §2 "runner", spec 002)."""
