"""Cron schedules against the real store: creation binds and persists the grammar, evaluator,
zone, H seed, DST policy and tz-rules snapshot; passes materialize with local wall time and
fold in the history; the tz-rules fence suspends before the cursor moves or Work exists; the
operator command re-issues; tampered cron rows are quarantined like other unevaluable rows."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command

from durable_schedule import schedules
from durable_schedule.errors import (
    DurableError,
    InvalidCronExpression,
    InvalidDstPolicy,
    ScheduleNeverFires,
    UnknownTimeZone,
)
from durable_schedule.evaluation.cron import zones
from durable_schedule.evaluation.cron.seed import seed_for
from durable_schedule.operations.status import collect
from tests.evaluation.cron.tzif import write_tzif
from tests.schedules.conftest import (
    HOUR,
    SCOPE,
    create,
    definition,
    dispatch,
    history,
    occurrences,
    one,
    rows,
    run_pass,
    set_work_state,
    works,
)

pytestmark = pytest.mark.django_db

# Europe/Berlin 2030: 31 March 02:00 CET -> 03:00 CEST (01:00Z); 27 October 03:00 -> 02:00.
SPRING_EVE = datetime(2030, 3, 30, 12, 0, tzinfo=UTC)
AUTUMN_EVE = datetime(2030, 10, 26, 12, 0, tzinfo=UTC)
BERLIN_EARLY = "CET-1CEST,M3.2.0,M10.5.0/3"  # a simulated tz update: summer from 2nd Sunday


def z(text: str) -> datetime:
    return datetime.fromisoformat(text)


def generation_row(schedule_id: str, generation: int = 1) -> tuple:
    kind, spec, version = one(
        "select kind, spec::text, evaluator_version from durable_schedule_generation"
        " where scope_id = %s and schedule_id = %s and generation = %s",
        (SCOPE, schedule_id, generation))
    return kind, json.loads(spec), version


def test_create__persists_grammar_evaluator_zone_seed_policy_and_rules(clock, target):
    clock.set(SPRING_EVE)
    info = create("nightly", schedules.Cron("30 2 * * *", "Europe/Berlin"), target)
    kind, spec, version = generation_row("nightly")
    assert (kind, version) == ("cron", "ds-cron-v1")
    assert {k: spec[k] for k in ("grammar", "expression", "tz", "dst_gap", "dst_fold")} == {
        "grammar": "cronos-v1", "expression": "30 2 * * *", "tz": "Europe/Berlin",
        "dst_gap": "shift", "dst_fold": "first"}
    assert spec["h_seed"] == seed_for(SCOPE, "nightly")
    rules = spec["tz_rules"]
    assert rules["zone"] == "Europe/Berlin" and rules["from"] == int(SPRING_EVE.timestamp())
    assert rules["changes"][0] == [int(z("2030-03-31T01:00+00:00").timestamp()), 7200]
    assert len(rules["fingerprint"]) == 64
    # 02:30 does not exist on 31 March: the first run is at 03:00 CEST.
    assert dispatch("nightly")[0] == z("2030-03-31T01:00+00:00")
    assert isinstance(info.spec, schedules.Cron)


def test_pass__materializes_the_shifted_run_with_its_local_wall_time(clock, target):
    clock.set(SPRING_EVE)
    create("nightly", schedules.Cron("30 2 * * *", "Europe/Berlin"), target)
    counts = run_pass(clock, z("2030-03-31T01:00:05+00:00"))
    assert counts.materialized == 1
    assert [o[1:3] for o in occurrences("nightly")] == [
        ("nominal", z("2030-03-31T01:00+00:00"))]
    event, _, detail = history("nightly")[-1]
    assert event == "materialized"
    assert detail["local"]["first"] == {"tz": "Europe/Berlin", "wall": "2030-03-31T02:30:00",
                                        "fold": 0, "shifted": True}
    assert dispatch("nightly")[0] == z("2030-04-01T00:30+00:00")  # 02:30 CEST


def test_autumn_repeat__a_fixed_time_runs_once_an_interval_in_both_passes(clock, target):
    clock.set(AUTUMN_EVE)
    create("fixed", schedules.Cron("30 2 * * *", "Europe/Berlin"), target)
    create("every30", schedules.Cron("*/30 2 * * *", "Europe/Berlin"), target)
    for minute in ("00:00", "00:30", "01:00", "01:30"):
        run_pass(clock, z(f"2030-10-27T{minute}:01+00:00"))
        for work_id, state, *_ in works():
            if state != "succeeded":
                set_work_state(work_id, "succeeded")  # free the queue_one slot
    assert [o[2] for o in occurrences("fixed")] == [z("2030-10-27T00:30+00:00")]
    assert [o[2] for o in occurrences("every30")] == [
        z(f"2030-10-27T{m}+00:00") for m in ("00:00", "00:30", "01:00", "01:30")]
    folds = [d["local"]["first"]["fold"] for e, _, d in history("every30")
             if e == "materialized"]
    assert folds == [0, 0, 1, 1]
    assert dispatch("fixed")[0] == z("2030-10-28T01:30+00:00")  # never twice on the 27th


@pytest.mark.parametrize(("spec", "error", "code"), [
    (lambda: schedules.Cron("0 0 31 2 *"), ScheduleNeverFires, "DS117"),
    (lambda: schedules.Cron("0 0 * * * * *"), InvalidCronExpression, "DS125"),
    (lambda: schedules.Cron("0 0 * * *", "Mars/Base"), UnknownTimeZone, "DS126"),
    (lambda: schedules.Cron("0 0 * * *", dst_gap="later"), InvalidDstPolicy, "DS127"),
])
def test_create__refuses_bad_cron_and_changes_nothing(clock, target, spec, error, code):
    with pytest.raises(error) as info:
        create("bad", spec(), target)
    assert info.value.code == code
    assert rows("select 1 from durable_schedule_definition where schedule_id = 'bad'") == []
    assert rows("select 1 from durable_schedule_generation where schedule_id = 'bad'") == []


def test_h__seeded_by_identity_equal_to_the_preview_and_spread(clock, target):
    spec = schedules.Cron("H H * * *", "Asia/Kolkata")
    dues = []
    for i in range(6):
        create(f"h{i}", spec, target)
        expected = schedules.next_instants(spec, clock.now, 1, identity=(SCOPE, f"h{i}"))[0]
        assert dispatch(f"h{i}")[0] == expected
        dues.append(expected)
    assert len(set(dues)) > 1


def test_misfire_and_safety_window_work_for_cron_as_for_every(clock, target):
    create("m", schedules.Cron("*/10 * * * *"), target, safety_window=HOUR)
    start = clock.now
    run_pass(clock, start + timedelta(minutes=35))
    kinds = [(o[1], o[2], o[3]) for o in occurrences("m")]
    assert kinds == [("recovery", start + timedelta(minutes=10), start + timedelta(minutes=30))]
    _, _, detail = history("m")[-1]
    assert (detail["count"], detail["count_exact"]) == (3, True)
    assert detail["local"]["last"]["wall"] == (start + timedelta(minutes=30)).strftime(
        "%Y-%m-%dT%H:%M:%S")
    # A jump far beyond the window suspends with evidence, before the cursor moves.
    clock.set(start + timedelta(days=3650))
    for work_id, *_ in works():
        set_work_state(work_id, "succeeded")
    run_pass(clock)
    d = definition("m")
    assert (d["state"], d["suspension_reason"]) == ("suspended", "clock_jump")
    ev = d["suspension_evidence"]
    assert ev["kind"] == "cron" and ev["evaluator_version"] == "ds-cron-v1"
    assert ev["count_exact"] is False and ev["count"] == 10_000


def test_tz_rules_change__suspends_before_work_then_the_command_reissues(clock, target,
                                                                         tmp_path):
    clock.set(datetime(2030, 1, 1, tzinfo=UTC))
    create("noon", schedules.Cron("0 12 * * *", "Europe/Berlin"), target)
    early = write_tzif(tmp_path / "berlin", BERLIN_EARLY, 3600, "CET")
    with zones.override("Europe/Berlin", early):
        counts = run_pass(clock, datetime(2030, 1, 1, 11, 0, 1, tzinfo=UTC))
        assert (counts.suspended, counts.materialized) == (1, 0)
        d = definition("noon")
        assert (d["state"], d["suspension_reason"]) == ("suspended", "tz_rules_changed")
        assert d["cursor_utc"] == datetime(2030, 1, 1, tzinfo=UTC)
        ev = d["suspension_evidence"]
        _, spec, _ = generation_row("noon")
        assert ev["persisted_fingerprint"] == spec["tz_rules"]["fingerprint"]
        assert ev["current_fingerprint"] != ev["persisted_fingerprint"]
        # 10 March 2030 (2nd Sunday) 12:00 is CEST under the new rules.
        assert ev["first_moved_instant"] == {
            "wall": "2030-03-10T12:00:00", "utc_new_rules": "2030-03-10T10:00:00.000000+00:00",
            "utc_old_rules": "2030-03-10T11:00:00.000000+00:00"}
        assert occurrences("noon") == [] and works() == []

        status = collect()
        assert f"{SCOPE}/noon" in status.tz_rules_mismatches
        assert any("changed tz rules" in p for p in status.problems)
        assert status.tz_rules == [{"tz": "Europe/Berlin", "fingerprint":
                                    ev["current_fingerprint"], "schedules": 1, "mismatched": 1}]
        out = io.StringIO()
        with pytest.raises(SystemExit):
            call_command("durable_status", stdout=out)
        assert "tz rules     Europe/Berlin" in out.getvalue()
        assert "1 mismatched" in out.getvalue()

        out = io.StringIO()
        with pytest.raises(SystemExit) as exit_info:
            call_command("durable_tz_rules", stdout=out)
        assert exit_info.value.code == 1
        assert "affected tenant-a/noon" in out.getvalue() and "2030-03-10T12:00:00" in \
            out.getvalue()
        assert definition("noon")["state"] == "suspended"  # a dry run changes nothing

        out = io.StringIO()
        call_command("durable_tz_rules", "--apply", "--json", stdout=out)
        doc = json.loads(out.getvalue())
        assert doc["reissued"] == [{"scope_id": SCOPE, "schedule_id": "noon",
                                    "generation": 2, "revision": 3}]
        d = definition("noon")
        assert (d["state"], d["active_generation"]) == ("active", 2)
        _, spec2, _ = generation_row("noon", 2)
        # Bound to the rules in force now, over a window from the new acceptance instant.
        assert spec2["tz_rules"]["from"] == int(datetime(2030, 1, 1, 11, 0, 1,
                                                         tzinfo=UTC).timestamp())
        assert spec2["tz_rules"]["changes"][0] == [
            int(datetime(2030, 3, 10, 1, 0, tzinfo=UTC).timestamp()), 7200]
        event, actor, _ = history("noon")[-1]
        assert (event, actor) == ("updated", "durable_tz_rules")
        assert collect().tz_rules_mismatches == []
        # Nothing before the re-issue is back-filled: the next run is 2 January 12:00 CET.
        assert dispatch("noon")[0] == datetime(2030, 1, 2, 11, 0, tzinfo=UTC)
        run_pass(clock, datetime(2030, 1, 2, 11, 0, 2, tzinfo=UTC))
        assert len(works()) == 1


def _plant(schedule_id: str, spec: dict, version: str = "ds-cron-v1") -> None:
    rows("insert into durable_schedule_generation (scope_id, schedule_id, generation, kind,"
         " spec, accepted_at_utc, target, overlap_policy, misfire_policy, safety_window,"
         " evaluator_version, created_by) select scope_id, schedule_id, 2, 'cron', %s,"
         " accepted_at_utc, target, overlap_policy, misfire_policy, safety_window, %s, ''"
         " from durable_schedule_generation where schedule_id = %s returning id",
         (json.dumps(spec), version, schedule_id))
    rows("update durable_schedule_definition set active_generation = 2 where schedule_id = %s"
         " returning id", (schedule_id,))


@pytest.mark.parametrize(("change", "version", "reason"), [
    ({"tz": "Mars/Base"}, "ds-cron-v1", "invalid_spec"),
    ({"expression": "61 * * * *"}, "ds-cron-v1", "invalid_spec"),
    ({}, "ds-cron-v9", "unknown_evaluator_version"),
    ({"grammar": "cronos-v2"}, "ds-cron-v1", "unknown_grammar_version"),
    ({"h_seed": -1}, "ds-cron-v1", "invalid_spec"),
    ({"dst_fold": "both"}, "ds-cron-v1", "invalid_spec"),
])
def test_tampered_cron_rows_are_quarantined(clock, target, change, version, reason):
    create("t", schedules.Cron("*/5 * * * *"), target)
    _, spec, _ = generation_row("t")
    _plant("t", {**spec, **change}, version)
    counts = run_pass(clock, clock.now + timedelta(minutes=5))
    assert (counts.suspended, counts.materialized) == (1, 0)
    d = definition("t")
    assert (d["state"], d["suspension_reason"]) == ("suspended", "unevaluable")
    assert d["suspension_evidence"]["code"] == "DS114"
    assert d["suspension_evidence"]["context"]["reason"] == reason
    assert works() == []


def test_tampered_tz_rules_list_is_quarantined(clock, target):
    create("t", schedules.Cron("*/5 * * * *", "Europe/Berlin"), target)
    _, spec, _ = generation_row("t")
    spec["tz_rules"]["changes"][0][1] = 3600  # edit the list but not its hash
    _plant("t", spec)
    run_pass(clock, clock.now + timedelta(minutes=5))
    d = definition("t")
    assert d["suspension_evidence"]["context"]["reason"] == "tz_rules_tampered"


def test_update__moves_between_every_and_cron(clock, target):
    create("u", schedules.Every(HOUR), target)
    info = schedules.update(SCOPE, "u", expected_revision=1,
                            spec=schedules.Cron("0 6 * * MON-FRI", "America/New_York"))
    assert generation_row("u", 2)[0] == "cron"
    assert isinstance(info.spec, schedules.Cron)
    # 2030-01-01 is a Tuesday; 06:00 EST is 11:00Z, after the 12:00Z acceptance: Wednesday.
    assert dispatch("u")[0] == datetime(2030, 1, 2, 11, 0, tzinfo=UTC)
    schedules.update(SCOPE, "u", expected_revision=info.revision, spec=schedules.Every(HOUR))
    assert generation_row("u", 3)[0] == "every"


def test_bad_input_never_reaches_the_database(clock, target):
    for bad in ("", "* * * *", "@often"):
        with pytest.raises(DurableError):
            schedules.update(SCOPE, "missing", expected_revision=1, spec=schedules.Cron(bad))


def test_queue_one_coalesces_cron_instants_behind_a_running_work(clock, target):
    create("c", schedules.Cron("*/10 * * * *", "Asia/Kolkata"), target)
    start = clock.now  # 12:00Z = 17:30 IST: instants every 10 minutes on the UTC grid too
    run_pass(clock, start + timedelta(minutes=10))
    run_pass(clock, start + timedelta(minutes=20))
    run_pass(clock, start + timedelta(minutes=30))
    assert [(o[1], o[2], o[3], o[4]) for o in occurrences("c")] == [
        ("nominal", start + timedelta(minutes=10), start + timedelta(minutes=10),
         "materialized"),
        ("coalesced", start + timedelta(minutes=20), start + timedelta(minutes=30), "pending")]
    [(work_id, *_)] = works()
    set_work_state(work_id, "succeeded")
    run_pass(clock, start + timedelta(minutes=31))
    assert [o[4] for o in occurrences("c")] == ["materialized", "materialized"]
    assert len(works()) == 2
