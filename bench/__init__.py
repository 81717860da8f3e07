"""Benchmarks of durable_schedule (issue 8): ``python -m bench``; see docs/benchmarks.md."""
