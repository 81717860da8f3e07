"""Adversarial review of the public Work API's inputs (docs/api.md, docs/work.md): a database
alias that ``DATABASES`` does not name, a generator handed to ``enqueue_many``, a codec that is
a class. Each is a DS-coded refusal that writes nothing and leaves the caller's transaction
usable."""

from __future__ import annotations

import pytest
from demo.models import Order
from django.db import transaction

from durable_schedule import work
from durable_schedule.errors import DurableError, InvalidArgument
from durable_schedule.work.acceptance import MAX_BATCH
from tests.work.conftest import count, history, work_row

pytestmark = pytest.mark.django_db

SCOPE = "tenant-a"
TABLES = ("durable_work", "durable_work_dispatch", "durable_work_history", "durable_schedule_scope")


def snapshot() -> dict[str, int]:
    return {table: count(table) for table in TABLES}


@pytest.fixture
def pending(clock, define):
    """A definition and one pending Work of it in SCOPE."""
    d = define("test.review13g.inputs")
    d.executor(lambda ctx, payload: {"ran": True})
    accepted = d.enqueue(scope=SCOPE, command="c-1", idempotency_key="k-1", payload={})
    return d, accepted.work_id


def calls(d, work_id):
    """Every public Work call that takes ``using=``, by name."""
    return {
        "definition.enqueue": lambda using: d.enqueue(
            scope=SCOPE, command="c-2", idempotency_key="k-2", payload={}, using=using
        ),
        "enqueue": lambda using: work.enqueue(
            SCOPE, d.request(command="c-3", idempotency_key="k-3", payload={}), using=using
        ),
        "enqueue_many": lambda using: work.enqueue_many(
            SCOPE, [d.request(command="c-4", idempotency_key="k-4", payload={})], using=using
        ),
        "enqueue into a new scope": lambda using: d.enqueue(
            scope="tenant-new", command="c-5", idempotency_key="k-5", payload={}, using=using
        ),
        "get": lambda using: work.get(SCOPE, work_id, using=using),
        "list": lambda using: work.list(SCOPE, using=using),
        "attempts": lambda using: work.attempts(SCOPE, work_id, using=using),
        "cancel": lambda using: work.cancel(SCOPE, work_id, actor="op", using=using),
        "resume": lambda using: work.resume(SCOPE, work_id, actor="op", using=using),
        "record_proof": lambda using: work.record_proof(
            SCOPE, work_id, "applied", actor="op", using=using
        ),
    }


CALLS = (
    "definition.enqueue",
    "enqueue",
    "enqueue_many",
    "enqueue into a new scope",
    "get",
    "list",
    "attempts",
    "cancel",
    "resume",
    "record_proof",
)


@pytest.mark.parametrize("using", ["no-such-alias", 7, 0, False, b"default"])
@pytest.mark.parametrize("call", CALLS)
def test_using__an_alias_databases_does_not_name_is_ds406_and_changes_nothing(pending, call, using):
    # Was Django's ConnectionDoesNotExist (a TypeError for a number; 0 and False were read as
    # "the default alias"): no DS code. process_work_pass already refused it with DS406.
    d, work_id = pending
    before = snapshot(), work_row(work_id, "state"), history(work_id)
    with pytest.raises(InvalidArgument) as caught:
        calls(d, work_id)[call](using)
    assert caught.value.code == "DS406"
    assert "using" in str(caught.value)
    assert (snapshot(), work_row(work_id, "state"), history(work_id)) == before


@pytest.mark.parametrize("using", [0, False])
def test_process_work_pass__a_falsy_non_alias_is_ds406_not_the_default_alias(pending, using):
    # Was read as "no alias given" (``using or default``): the pass ran on the store's alias.
    d, work_id = pending
    before = snapshot(), work_row(work_id, "state"), history(work_id)
    with pytest.raises(InvalidArgument) as caught:
        work.process_work_pass(using=using, heartbeat=False)
    assert caught.value.code == "DS406"
    assert (snapshot(), work_row(work_id, "state"), history(work_id)) == before


def test_using__the_refusal_leaves_the_callers_transaction_usable(pending):
    d, work_id = pending
    with transaction.atomic():
        Order.objects.create(number=1)
        with pytest.raises(InvalidArgument):
            d.enqueue(
                scope=SCOPE, command="c-2", idempotency_key="k-2", payload={}, using="no-such-alias"
            )
        accepted = d.enqueue(scope=SCOPE, command="c-2", idempotency_key="k-2", payload={})
        Order.objects.create(number=2)
    assert accepted.created and Order.objects.count() == 2
    assert work.get(SCOPE, accepted.work_id).state == "pending"


def test_using__none_and_the_configured_alias_are_the_store(pending):
    d, work_id = pending
    assert work.get(SCOPE, work_id, using=None).work_id == work_id
    assert work.get(SCOPE, work_id, using="default").work_id == work_id


def test_enqueue_many__a_generator_is_read_no_further_than_one_call_can_take(clock, define):
    # Was: the whole generator was drained into a list before the batch bound was checked, so
    # an endless generator never returned and a huge one was built in memory to be refused.
    d = define("test.review13g.generator")
    taken = []

    def requests():
        for i in range(5 * MAX_BATCH):
            taken.append(i)
            yield d.request(command=f"c-{i}", idempotency_key="k", payload={})

    with pytest.raises(InvalidArgument) as caught:
        work.enqueue_many(SCOPE, requests())
    assert caught.value.code == "DS406"
    assert f"at most {MAX_BATCH}" in str(caught.value)
    assert len(taken) == MAX_BATCH + 1
    assert snapshot() == dict.fromkeys(TABLES, 0)


def test_enqueue_many__a_generator_within_the_bound_is_accepted_whole(clock, define):
    d = define("test.review13g.generator-ok")
    accepted = work.enqueue_many(
        SCOPE,
        (d.request(command=f"c-{i}", idempotency_key="k", payload={}) for i in range(MAX_BATCH)),
    )
    assert len(accepted) == MAX_BATCH and all(a.created for a in accepted)
    assert count("durable_work") == MAX_BATCH


def test_enqueue_many__an_empty_call_is_refused_before_any_write(clock):
    # docs/work.md "Bulk": 1 to 1,000 requests per call.
    with pytest.raises(InvalidArgument) as caught:
        work.enqueue_many(SCOPE, iter(()))
    assert caught.value.code == "DS406"
    assert snapshot() == dict.fromkeys(TABLES, 0)


class NotCallableEncode:
    encode = "not a function"

    def decode(self, data):
        return data


@pytest.mark.parametrize(
    "codec", [work.JsonCodec, NotCallableEncode()], ids=["a class", "encode is not callable"]
)
def test_define__a_codec_that_cannot_encode_is_refused_at_define(define, codec):
    # Was accepted (both pass the Codec protocol's isinstance check), and every request of the
    # definition then failed with a bare TypeError.
    with pytest.raises(DurableError) as caught:
        define("test.review13g.codec", codec=codec)
    assert caught.value.code == "DS406"
    assert work.lookup("test.review13g.codec", "v1") is None


def test_define__a_codec_instance_still_works(clock, define):
    d = define("test.review13g.codec-ok", codec=work.JsonCodec())
    assert d.enqueue(scope=SCOPE, command="c", idempotency_key="k", payload=[1]).created
