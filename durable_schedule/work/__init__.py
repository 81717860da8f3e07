"""Durable Work: accept Work inside the caller's transaction and execute it under explicit
retry, attempt-plan and deadline policies (docs/protocol/work.md; docs/work.md, docs/api.md).

This module is the public API; it only re-exports documented names. Everything in the
submodules that is not listed in ``__all__`` is private.
"""

from durable_schedule.evaluation.policy import (
    AttemptPlan,
    ExecutionDeadline,
    ExecutionPolicy,
    RetryPolicy,
)
from durable_schedule.work.attempts import AttemptInfo, attempts
from durable_schedule.work.codec import Codec, JsonCodec
from durable_schedule.work.enqueue import AcceptedWork, WorkRequest, enqueue, enqueue_many
from durable_schedule.work.executor import WorkContext
from durable_schedule.work.inspection import ExecutionSnapshot, WorkInfo, get
from durable_schedule.work.inspection import list_work as list  # noqa: A001 -- documented name
from durable_schedule.work.passes import WorkPassCounts, process_work_pass
from durable_schedule.work.proof import ProofRecorded, cancel, record_proof, resume
from durable_schedule.work.registry import WorkDefinition, autodiscover, define, lookup
from durable_schedule.work.rows import NONTERMINAL_STATES, STATES, TERMINAL_STATES
from durable_schedule.work.safety import Applied, NotApplied, ProviderSafety, Unknown
from durable_schedule.work.target import WorkTarget

__all__ = [
    "AcceptedWork",
    "Applied",
    "AttemptInfo",
    "AttemptPlan",
    "Codec",
    "ExecutionDeadline",
    "ExecutionPolicy",
    "ExecutionSnapshot",
    "JsonCodec",
    "NONTERMINAL_STATES",
    "NotApplied",
    "ProofRecorded",
    "ProviderSafety",
    "RetryPolicy",
    "STATES",
    "TERMINAL_STATES",
    "Unknown",
    "WorkContext",
    "WorkDefinition",
    "WorkInfo",
    "WorkPassCounts",
    "WorkRequest",
    "WorkTarget",
    "attempts",
    "autodiscover",
    "cancel",
    "define",
    "enqueue",
    "enqueue_many",
    "get",
    "list",
    "lookup",
    "process_work_pass",
    "record_proof",
    "resume",
]
