"""A refused ``durable_prune`` argument names the argument and what to give instead (DS427):
a bad ``--batch`` was answered with the hint for ``--older-than``."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("batch", ["0", "-5", "10001"])
def test_prune_command__a_bad_batch_is_refused_with_a_hint_about_the_batch(clock, batch):
    with pytest.raises(CommandError) as err:
        call_command("durable_prune", "--older-than", "30d", "--batch", batch, stdout=StringIO())
    message = str(err.value)
    assert message.startswith("DS427: ")
    hint = message.split(" — ", 1)[1]
    assert "--batch" in hint and "10000" in hint, message
