"""Cron schedules: the Cronos grammar "cronos-v1" and evaluator "ds-cron-v1" (docs/schedules.md).

parser (grammar, field enum), calendar (day and time-of-day matching), zones (loading, test
seam, rules fingerprint), evaluator (instants under the DST policy), spec (``Cron``, binding,
JSON), fence (the tz-rules check before evaluation), explain (a sentence for humans).
"""

from durable_schedule.evaluation.cron.evaluator import EVALUATOR_VERSION, Evaluator, Occurrence
from durable_schedule.evaluation.cron.explain import explain
from durable_schedule.evaluation.cron.parser import GRAMMAR_VERSION, MACROS, CronPattern, parse
from durable_schedule.evaluation.cron.spec import Cron

__all__ = ["EVALUATOR_VERSION", "GRAMMAR_VERSION", "MACROS", "Cron", "CronPattern",
           "Evaluator", "Occurrence", "explain", "parse"]
