"""Fuzz: any text either parses or is refused with DS125 (never another exception); any
accepted expression evaluates in any zone from any instant to a later instant or None."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from durable_schedule.errors import InvalidCronExpression
from durable_schedule.evaluation.cron import Cron, parse
from tests.evaluation.cron.test_differential import expressions

ALPHABET = st.sampled_from(list("0123456789*?,-/#LWH @ \tJANFEBMONSUNabc"))


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(ALPHABET, max_size=40), st.text(max_size=20)))
def test_any_text_parses_or_is_refused_with_ds125(text):
    try:
        parse(text, seed=7)
    except InvalidCronExpression as exc:
        assert exc.code == "DS125" and isinstance(exc.context["position"], int)


@settings(max_examples=150, deadline=None)
@given(expressions(), st.sampled_from(["UTC", "Europe/Berlin", "Pacific/Apia",
                                       "Australia/Lord_Howe", "America/Santiago"]),
       st.integers(int(datetime(1971, 1, 1, tzinfo=UTC).timestamp()),
                   int(datetime(2090, 1, 1, tzinfo=UTC).timestamp())),
       st.sampled_from(["shift", "skip"]), st.sampled_from(["first", "second"]))
def test_accepted_expressions_evaluate_forward_and_backward(expr, tz, t, gap, fold):
    ev = Cron(expr[0], tz, dst_gap=gap, dst_fold=fold).evaluator()
    nxt = ev.next_after(t)
    if nxt is not None:
        assert nxt.utc > t
        assert ev.prev_at_or_before(nxt.utc).utc == nxt.utc
        assert ev.prev_at_or_before(nxt.utc - 1) is None or \
            ev.prev_at_or_before(nxt.utc - 1).utc <= t
