"""Task arguments JSON has but the store cannot hold are refused like any non-JSON argument
(DS241, naming the argument, also a TypeError): before, a NUL character, an unpaired surrogate
or an over-long int passed the argument walk and the store refused the payload with DS209,
which says neither which argument it was nor is the TypeError Django's backends raise."""

from __future__ import annotations

import pytest
from demo import tasks as demo

from durable_schedule.errors import InvalidTaskArguments
from durable_schedule.store.models import Work

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(("args", "kwargs", "path"), [
    (("a\x00b", 1), {}, "args[0]"),
    ((1,), {"b": ["ok", "bytes \udcff"]}, "kwargs['b'][1]"),
    ((1,), {"b": {"key\x00": 1}}, "kwargs['b']['key\\x00']"),
    ((10 ** 5000, 1), {}, "args[0]"),
], ids=["nul", "lone-surrogate", "nul-in-key", "long-int"])
def test_arguments__unstorable_text_and_long_ints_are_refused_naming_the_argument(
        committed_clock, args, kwargs, path):
    with pytest.raises(InvalidTaskArguments, match="DS241") as caught:
        demo.add.enqueue(*args, **kwargs)
    assert isinstance(caught.value, TypeError)
    assert caught.value.context["path"] == path
    assert Work.objects.count() == 0


def test_arguments__text_and_ints_the_store_holds_still_pass(committed_clock):
    result = demo.add.enqueue("héllo ✓", 10 ** 1000)
    assert result.args == ["héllo ✓", 10 ** 1000]
    assert Work.objects.count() == 1
