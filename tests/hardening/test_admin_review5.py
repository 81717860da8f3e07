"""The admin's proof form answers every pasted text with a form error or a value, never a server
error (docs/admin.md: an operator's bad input is reported on the page)."""

from __future__ import annotations

import pytest

from durable_schedule.admin.actions import ProofForm


@pytest.mark.parametrize("text", ["[" * 100_000, "[" * 50_000 + "]" * 50_000, "{"])
def test_proof_form__deep_or_broken_json_is_a_form_error(text):
    form = ProofForm(data={"outcome": "applied", "result": text})
    assert not form.is_valid()
    assert "result" in form.errors


def test_proof_form__plain_json_is_accepted():
    form = ProofForm(data={"outcome": "applied", "result": '{"invoice": 42}'})
    assert form.is_valid() and form.cleaned_data["result"] == {"invoice": 42}
