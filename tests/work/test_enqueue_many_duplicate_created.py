"""docs/work.md "Accepting Work", Bulk: ``enqueue_many`` returns one ``AcceptedWork`` per request,
and ``created`` says whether *that request* created the Work (False for a duplicate of stored
Work). The same identity twice in one call is one Work: only its first position created it, the
later ones are duplicates of it. Before, every position reported ``created=True``, so an import
counting what it created counted such a Work twice."""

from __future__ import annotations

import uuid

import pytest

from durable_schedule import work
from tests.work.conftest import count
from tests.work.test_enqueue_many import request

pytestmark = pytest.mark.django_db


def test_duplicates_in_one_call__only_the_first_position_created_the_work(clock):
    accepted = work.enqueue_many("tenant-a", [request(1), request(2), request(1), request(1)])
    assert [a.created for a in accepted] == [True, True, False, False]
    assert accepted[0].work_id == accepted[2].work_id == accepted[3].work_id
    assert sum(a.created for a in accepted) == count("durable_work") == 2


def test_duplicates_in_one_call__an_explicit_work_id_later_in_the_list(clock):
    wid = uuid.uuid4()
    accepted = work.enqueue_many("tenant-a", [request(1), request(1, work_id=wid)])
    assert [(a.work_id, a.created) for a in accepted] == [(wid, True), (wid, False)]


def test_duplicates_of_stored_work__stay_not_created_at_every_position(clock):
    work.enqueue("tenant-a", request(1))
    accepted = work.enqueue_many("tenant-a", [request(1), request(3), request(1)])
    assert [a.created for a in accepted] == [False, True, False]
