"""durable_prune's per-scope mark (docs/operations.md "Retention"): Work that becomes terminal
with a finish time at or below the mark (the database clock stepped back) is still pruned: a
normal run reads again one margin before the mark, a mark that lies after the database's now
makes the run read that scope in full, and ``--rescan`` reads every scope in full. Already
pruned Work is never counted again, and a dry run counts what the real run removes."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from durable_schedule.errors import InvalidPruneMargin, InvalidPruneRescan
from durable_schedule.operations.retention import prune
from tests.conftest import T0
from tests.work.conftest import run_pass as work_pass

pytestmark = pytest.mark.django_db
DAY = timedelta(days=1)
HOUR = timedelta(hours=1)


def history_of(command: str) -> int:
    with connection.cursor() as cur:
        cur.execute("select count(*) from durable_work_history h join durable_work w"
                    " using (scope_id, work_id) where w.command_id = %s", [command])
        return cur.fetchone()[0]


def mark() -> tuple:
    with connection.cursor() as cur:
        cur.execute("select m.finished_at, w.command_id from durable_work_retention_mark m"
                    " join durable_work w on w.id = m.work_ref")
        return cur.fetchone()


def succeed(ok, clock, at, command: str) -> None:
    clock.set(at)
    ok.enqueue(scope="tenant-a", command=command, idempotency_key="k", payload={})
    assert work_pass(max_items=10).succeeded == 1


@pytest.fixture
def ok(define):
    handler = define("mark.ok")
    handler.executor(lambda ctx, payload: {})
    return handler


def pruned_a_at_ten_days(ok, clock) -> None:
    """Work a finishes at T0+10d; a prune at T0+41d removes its detail and marks it."""
    succeed(ok, clock, T0 + 10 * DAY, "a")
    clock.set(T0 + 41 * DAY)
    assert prune(30 * DAY, dry_run=False).work == 1
    assert mark() == (T0 + 10 * DAY, "a")


def test_prune__the_reproduction_a_step_back_past_the_mark_is_pruned_with_rescan(ok, clock):
    pruned_a_at_ten_days(ok, clock)
    succeed(ok, clock, T0 + 5 * DAY, "b")  # the database clock stepped back five days
    assert history_of("b") == 3
    clock.set(T0 + 90 * DAY)
    preview = prune(30 * DAY, dry_run=True, rescan=True)
    assert (preview.work, preview.work_history, preview.permits) == (1, 3, 1)
    assert preview.rescanned == 1
    result = prune(30 * DAY, dry_run=False, rescan=True)
    assert (result.work, result.work_history, result.permits) == (1, 3, 1)
    assert history_of("b") == 0
    assert mark() == (T0 + 10 * DAY, "a")  # the mark never moves back
    again = prune(30 * DAY, dry_run=False)  # a normal run after the full one counts nothing
    assert (again.work, again.work_history, again.permits) == (0, 0, 0)
    assert prune(30 * DAY, dry_run=True, rescan=True).work == 0


def test_prune__the_reproduction_with_a_daily_run_is_caught_by_the_mark_lying_ahead(ok, clock):
    pruned_a_at_ten_days(ok, clock)
    succeed(ok, clock, T0 + 5 * DAY, "b")
    clock.set(T0 + 6 * DAY)  # the daily run, while the clock is still behind the mark
    daily = prune(30 * DAY, dry_run=False)
    assert (daily.work, daily.mark_ahead) == (0, 1)  # nothing old enough yet
    assert mark() is None  # forgotten; nothing before the cutoff to put it on
    clock.set(T0 + 90 * DAY)
    preview = prune(30 * DAY, dry_run=True)
    assert (preview.work, preview.work_history) == (1, 3)
    result = prune(30 * DAY, dry_run=False)
    assert (result.work, result.work_history, result.mark_ahead) == (1, 3, 0)
    assert history_of("b") == 0
    assert mark() == (T0 + 5 * DAY, "b")  # written anew by the full run
    assert prune(30 * DAY, dry_run=True).work == 0


def test_prune__a_step_back_within_the_margin_is_caught_by_a_normal_run(ok, clock):
    pruned_a_at_ten_days(ok, clock)
    succeed(ok, clock, T0 + 10 * DAY - 12 * HOUR, "b")  # finishes half a day before a
    clock.set(T0 + 90 * DAY)
    preview = prune(30 * DAY, dry_run=True)
    assert (preview.work, preview.work_history, preview.rescanned, preview.mark_ahead) == (
        1, 3, 0, 0)
    result = prune(30 * DAY, dry_run=False)
    assert (result.work, result.work_history, result.permits) == (1, 3, 1)
    assert history_of("b") == 0
    assert mark() == (T0 + 10 * DAY, "a")
    again = prune(30 * DAY, dry_run=False)  # a in the margin again: already pruned, not counted
    assert (again.work, again.work_history) == (0, 0)


def test_prune__beyond_the_margin_a_normal_run_misses_it_a_wider_margin_does_not(ok, clock):
    pruned_a_at_ten_days(ok, clock)
    succeed(ok, clock, T0 + 8 * DAY, "b")  # two days before a: beyond the default margin
    clock.set(T0 + 90 * DAY)
    assert prune(30 * DAY, dry_run=True).work == 0
    assert prune(30 * DAY, dry_run=True, margin=3 * DAY).work == 1
    assert prune(30 * DAY, dry_run=False, margin=3 * DAY).work == 1
    assert history_of("b") == 0


def test_prune_command__the_longest_margin_is_accepted_and_reads_back_past_the_step(ok, clock):
    pruned_a_at_ten_days(ok, clock)
    succeed(ok, clock, T0 + 5 * DAY, "b")
    clock.set(T0 + 90 * DAY)
    out = StringIO()
    call_command("durable_prune", "--older-than", "30d", "--margin", "365000d", stdout=out)
    assert "history of 1 terminal Work (3 history rows" in out.getvalue()
    assert history_of("b") == 0


def test_prune__a_mark_after_now_is_ignored_and_written_anew(ok, clock):
    succeed(ok, clock, T0 + 10 * DAY, "a")
    clock.set(T0 + 10 * DAY + 2 * HOUR)
    assert prune(HOUR, dry_run=False).work == 1
    assert mark() == (T0 + 10 * DAY, "a")
    succeed(ok, clock, T0 + 3 * DAY, "b")  # the clock went back a week, past the mark
    clock.set(T0 + 3 * DAY + 2 * HOUR)
    out = StringIO()
    call_command("durable_prune", "--older-than", "1h", "--dry-run", stdout=out)
    assert "history of 1 terminal Work (3 history rows" in out.getvalue()
    assert "the retention mark of 1 scopes lay after the database's now" in out.getvalue()
    assert history_of("b") == 3 and mark() == (T0 + 10 * DAY, "a")  # the dry run changed nothing
    out = StringIO()
    call_command("durable_prune", "--older-than", "1h", stdout=out)
    assert "history of 1 terminal Work (3 history rows" in out.getvalue()
    assert "their mark written anew" in out.getvalue()
    assert history_of("b") == 0
    assert mark() == (T0 + 3 * DAY, "b")  # no longer after now
    again = prune(HOUR, dry_run=False)
    assert (again.work, again.work_history, again.mark_ahead) == (0, 0, 0)


def test_prune__a_mark_after_now_with_nothing_left_goes_on_the_last_pruned_work(ok, clock):
    succeed(ok, clock, T0 + 1 * DAY, "w0")
    succeed(ok, clock, T0 + 10 * DAY, "a")
    clock.set(T0 + 10 * DAY + 2 * HOUR)
    assert prune(HOUR, dry_run=False).work == 2
    assert mark() == (T0 + 10 * DAY, "a")
    clock.set(T0 + 5 * DAY)  # the clock went back past the mark; nothing is left to remove
    assert prune(HOUR, dry_run=True).mark_ahead == 1
    assert mark() == (T0 + 10 * DAY, "a")  # a dry run leaves the mark alone
    result = prune(HOUR, dry_run=False)
    assert (result.work, result.work_history, result.mark_ahead) == (0, 0, 1)
    assert mark() == (T0 + 1 * DAY, "w0")  # the last Work before the cutoff, all pruned
    clock.set(T0 + 5 * DAY + HOUR)
    again = prune(HOUR, dry_run=False)
    assert (again.work, again.mark_ahead) == (0, 0)  # the next run reads after the mark again


def test_prune__batches_of_a_full_scan_and_the_dry_run_agree(ok, clock):
    succeed(ok, clock, T0 + 10 * DAY, "a")
    clock.set(T0 + 41 * DAY)
    assert prune(30 * DAY, dry_run=False).work == 1
    for i in range(5):  # the clock went back: five Work finish before a
        succeed(ok, clock, T0 + (2 + i) * DAY, f"b{i}")
    clock.set(T0 + 90 * DAY)
    preview = prune(30 * DAY, dry_run=True, rescan=True, batch=2)
    result = prune(30 * DAY, dry_run=False, rescan=True, batch=2)
    assert (preview.work, preview.work_history, preview.permits) == (5, 15, 5)
    assert (result.work, result.work_history, result.permits) == (5, 15, 5)
    assert result.batches == 4  # 2 + 2 + 1 Work batches, one occurrence batch
    assert sum(history_of(f"b{i}") for i in range(5)) == 0
    assert prune(30 * DAY, dry_run=True, rescan=True).work == 0


@pytest.mark.parametrize("margin", ["0m", "30s", "1.5d", "x", "", "365001d"])
def test_prune_command__a_bad_margin_is_refused_and_changes_nothing(ok, clock, margin):
    succeed(ok, clock, T0, "a")
    clock.set(T0 + 31 * DAY)
    with pytest.raises(CommandError) as err:
        call_command("durable_prune", "--older-than", "30d", "--margin", margin,
                     stdout=StringIO())
    assert str(err.value).startswith("DS442: "), str(err.value)
    assert "--margin" in str(err.value)
    assert history_of("a") == 3


def test_prune_command__rescan_with_a_margin_is_refused_and_changes_nothing(ok, clock):
    succeed(ok, clock, T0, "a")
    clock.set(T0 + 31 * DAY)
    with pytest.raises(CommandError) as err:
        call_command("durable_prune", "--older-than", "30d", "--rescan", "--margin", "2d",
                     stdout=StringIO())
    assert str(err.value).startswith("DS443: "), str(err.value)
    assert history_of("a") == 3
    out = StringIO()
    call_command("durable_prune", "--older-than", "30d", "--rescan", "--dry-run", stdout=out)
    assert "history of 1 terminal Work" in out.getvalue()


@pytest.mark.parametrize("kwargs,error", [
    ({"margin": timedelta(0)}, InvalidPruneMargin),
    ({"margin": timedelta(seconds=30)}, InvalidPruneMargin),
    ({"margin": "1d"}, InvalidPruneMargin),
    ({"margin": timedelta(days=366_000)}, InvalidPruneMargin),
    ({"rescan": "yes"}, InvalidPruneRescan),
    ({"rescan": True, "margin": DAY}, InvalidPruneRescan),
])
def test_prune__bad_margin_or_rescan_arguments_are_refused(ok, clock, kwargs, error):
    succeed(ok, clock, T0, "a")
    clock.set(T0 + 31 * DAY)
    with pytest.raises(error):
        prune(30 * DAY, dry_run=False, **kwargs)
    assert history_of("a") == 3
