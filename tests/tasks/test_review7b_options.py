"""OPTIONS['DATABASE'] must name an alias of DATABASES. Before the fix a misspelt alias was
accepted when the backend was built and the first enqueue (or get_result) failed with
Django's bare ConnectionDoesNotExist, which carries no DS code."""

from __future__ import annotations

import pytest

from durable_schedule.errors import InvalidTaskOptions
from durable_schedule.tasks import DurableBackend


def build(options):
    return DurableBackend("checked", {"BACKEND": "durable_schedule.tasks.DurableBackend",
                                      "OPTIONS": options})


@pytest.mark.parametrize("database", ["defualt", 5, ["default"]])
def test_backend__an_unknown_database_alias_is_ds243_when_built(database):
    with pytest.raises(InvalidTaskOptions, match="DS243") as caught:
        build({"DATABASE": database})
    assert "DATABASE" in caught.value.message


@pytest.mark.parametrize("database", ["default", "other"])
def test_backend__a_database_alias_of_databases_is_accepted(database):
    assert build({"DATABASE": database}).database == database
