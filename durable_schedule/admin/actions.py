"""Operator actions, through the public API only (docs/protocol/conventions.md rule C4,
docs/architecture.md "admin").

django-celery-beat's trap is an admin action that calls ``queryset.update()`` and so skips the
invariants the rest of the code relies on. Here every operation is one call of the public API
per row, exactly what an application would call:

* schedules: ``schedules.suspend``, ``schedules.release_after_recovery``, ``schedules.delete``,
  ``schedules.pause`` / ``resume``, ``schedules.trigger`` (run now) and ``schedules.update``
  without changes (re-issue a suspended schedule as a new generation);
* Work: ``work.record_proof`` (Applied / NotApplied) on suspended Work.

Each operation is a confirmation page (a GET shows the rows and, for a proof, the permit it
resolves; a CSRF-protected POST performs it) guarded by a dedicated permission, records the
acting user (``actor=request.user.get_username()``), and reports every row as a message: done,
or refused with the diagnostic code of the refusal. The change list actions only select rows
and redirect to that page. Rows are read inside the page's scoped read transaction and the API
calls run after it, each in the API's own ``scoped()`` transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import BadRequest, PermissionDenied
from django.db import connections, transaction
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode

from durable_schedule.admin import scoping, timeline
from durable_schedule.errors import DurableError, InvalidArgument, ProofRefused, WorkStateConflict
from durable_schedule.evaluation.cron.fence import REASON as TZ_RULES_CHANGED

#: The most rows one operation handles (the ids travel in the URL).
MAX_ROWS = 100


def refusal(exc: DurableError) -> str:
    """A refusal as an operator reads it: code, message, what to do next."""
    return f"{exc.code}: {exc.message}. {exc.next_action}"


# ---------------------------------------------------------------- forms
class SuspendForm(forms.Form):
    reason = forms.CharField(
        max_length=1000, strip=True, widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
        help_text="Why you suspend: kept as the suspension evidence (the reason code is "
        "'operator') and in the schedule's history. Resume later with schedules.update().",
    )


class DeleteForm(forms.Form):
    confirm = forms.BooleanField(
        label="I understand that deletion is terminal for these schedule identities",
    )


class ReleaseForm(forms.Form):
    pass


class PauseForm(forms.Form):
    note = forms.CharField(
        max_length=1000, strip=True, widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
        help_text="Why you pause: kept with the pause and in the schedule's history.",
    )


class ResumeForm(forms.Form):
    catch_up = forms.ChoiceField(
        choices=[("misfire_policy", "Follow the misfire policy for the instants missed while "
                                    "paused (run_once: one recovery run; skip: skipped)"),
                 ("skip", "Skip the instants missed while paused (counted as missed)")],
        initial="misfire_policy", widget=forms.RadioSelect,
    )


class TriggerForm(forms.Form):
    # Generated when the page is shown: posting the page twice runs the schedule once.
    request_id = forms.CharField(max_length=200, widget=forms.HiddenInput)


class ReissueForm(forms.Form):
    pass


class CancelWorkForm(forms.Form):
    confirm = forms.BooleanField(
        label="I understand that canceling is terminal for this Work (it will not run)",
    )


class ProofForm(forms.Form):
    outcome = forms.ChoiceField(
        choices=[("applied", "Applied: the effect happened"),
                 ("not_applied", "NotApplied: the effect did not happen")],
        widget=forms.RadioSelect,
    )
    result = forms.CharField(
        required=False, strip=True, widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="Applied only: the Work's result as JSON, e.g. {\"invoice\": 42} (optional).",
    )

    def clean_result(self):
        text = self.cleaned_data.get("result") or ""
        if not text:
            return None
        try:
            return json.loads(text)
        except ValueError as exc:
            raise forms.ValidationError(f"Enter valid JSON ({exc}).") from None
        except RecursionError:
            # json.loads recurses per bracket: a deep paste would be a server error, not a
            # form error (the store refuses more than 64 levels anyway).
            raise forms.ValidationError("Enter JSON nested less deeply.") from None

    def clean(self):
        data = super().clean()
        if data.get("outcome") == "not_applied" and data.get("result") is not None:
            raise forms.ValidationError("A NotApplied proof carries no result.")
        return data


# ---------------------------------------------------------------- plumbing
@dataclass(frozen=True)
class Operation:
    name: str
    title: str
    verb: str
    permission: str
    form: type[forms.Form]
    #: Lifecycle states in which the detail page offers the operation.
    offered_in: frozenset[str]
    #: The detail page's button.
    button: str = ""
    #: Suspension reasons for which the detail page offers it (None: any row in offered_in).
    reasons: frozenset[str] | None = None
    #: The confirmation page's template ("": the admin's own ``operation_template``).
    template: str = ""

    def applies_to(self, obj) -> bool:
        if obj.state not in self.offered_in:
            return False
        return self.reasons is None or obj.suspension_reason in self.reasons


def _posted_number(request, name: str) -> int | None:
    """The positive number the confirmation page posted as ``name`` (None: none posted).
    Anything else -- a sign, a non-ASCII digit such as "²" (``str.isdigit`` admits it, ``int``
    does not), thousands of digits -- is ``InvalidArgument`` (DS406): a tampered page changes
    nothing, and no value reaches ``int()`` that it would refuse with a server error."""
    raw = request.POST.get(name, "")
    if raw == "":
        return None
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 18) or int(raw) < 1:
        raise InvalidArgument(f"{name} must be a positive number", field=name,
                              got=raw[:40])
    return int(raw)


def _selected_ids(request) -> list[int]:
    """The row ids the operation names (``ids``: comma-separated positive numbers, at most
    MAX_ROWS). Anything else is a 400 with DS406 and changes nothing: more rows than an
    operation handles are refused, not cut to the first MAX_ROWS unseen."""
    raw = (request.POST.get("ids") if request.method == "POST" else request.GET.get("ids")) or ""
    parts = [part for part in raw.split(",") if part]
    if not parts or not all(_is_row_id(p) for p in parts):
        raise _bad_ids("must be a comma-separated list of row ids", raw)
    ids = sorted({int(part) for part in parts})
    if len(ids) > MAX_ROWS:
        raise _bad_ids(f"names {len(ids)} rows; an operation handles at most {MAX_ROWS}", raw)
    return ids


def _is_row_id(text: str) -> bool:
    """A row id as a form or URL may carry it: ASCII digits that fit a bigint."""
    return text.isascii() and text.isdigit() and len(text) <= 18


def _bad_ids(why: str, raw: str) -> BadRequest:
    exc = InvalidArgument(f"ids {why}", field="ids", got=raw[:40])
    return BadRequest(f"{exc.code}: {exc.message}. {exc.next_action}")


def _redirect_to_operation(modeladmin, request, queryset, operation: str):
    ids = list(queryset.values_list("pk", flat=True)[: MAX_ROWS + 1])
    if len(ids) > MAX_ROWS:
        modeladmin.message_user(
            request, f"At most {MAX_ROWS} rows per operation: only the first {MAX_ROWS} are "
            "shown.", messages.WARNING)
    query = {"ids": ",".join(str(i) for i in ids[:MAX_ROWS])}
    scope_id = scoping.named_scope(request)
    if scope_id:
        query[scoping.SCOPE_PARAM] = scope_id
    return HttpResponseRedirect(f"{modeladmin.operation_url(operation)}?{urlencode(query)}")


class _Operations:
    """Operation pages for a ModelAdmin; subclasses declare ``operations`` and ``perform``."""

    operations: dict[str, Operation] = {}
    operation_template = "admin/durable_schedule/operation_confirm.html"

    def get_urls(self):
        name = f"{self.opts.app_label}_{self.opts.model_name}_operate"
        # Never one request transaction (ATOMIC_REQUESTS): each API call commits on its own,
        # so an error at a later row leaves the rows already handled (and reported) handled.
        view = self.admin_site.admin_view(self.operation_view)
        for alias in connections:  # the API's alias (DURABLE_SCHEDULE['DATABASE']) included
            view = transaction.non_atomic_requests(using=alias)(view)
        own = [path("operate/<str:operation>/", view, name=name)]
        return own + super().get_urls()

    def response_action(self, request, queryset, *args, **kwargs):
        """Django's change list action, after checking the selected row ids: Django passes
        them to ``pk__in`` as posted, and a crafted ``_selected_action=abc`` was a server error
        (ValueError) instead of a refusal. Anything but row ids is a 400 (DS406). Django 6.1
        passes ``action_location`` as well (5.2 does not): whatever Django passes goes on."""
        selected = request.POST.getlist(ACTION_CHECKBOX_NAME)
        bad = [value for value in selected if not _is_row_id(value)]
        if bad:
            raise _bad_ids("must be row ids", ",".join(bad))
        return super().response_action(request, queryset, *args, **kwargs)

    def operation_url(self, operation: str) -> str:
        return reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_operate",
                       args=[operation])

    def has_operation_permission(self, request, operation: Operation) -> bool:
        """The operation's own permission, and the right to see the rows it acts on."""
        return (request.user.has_perm(f"{self.opts.app_label}.{operation.permission}")
                and self.has_view_permission(request))

    def operations_for(self, request, obj) -> list[dict]:
        """The operations the detail page offers for ``obj`` (permitted and applicable)."""
        offered = []
        for op in self.operations.values():
            if op.applies_to(obj) and self.has_operation_permission(request, op):
                query = urlencode({"ids": obj.pk, scoping.SCOPE_PARAM: obj.scope_id,
                                   "next": request.get_full_path()})
                offered.append({"name": op.name, "title": op.button or op.title,
                                "url": f"{self.operation_url(op.name)}?{query}"})
        return offered

    def operation_view(self, request, operation: str):
        op = self.operations.get(operation)
        if op is None:
            raise Http404(f"unknown operation {operation!r}")
        if not self.has_operation_permission(request, op):
            raise PermissionDenied
        ids = _selected_ids(request)
        with scoping.read_scope(request):
            # Up to MAX_ROWS rows: not their payloads (ReadOnlyScopedAdmin.list_deferred).
            rows = list(self.get_queryset(request).filter(pk__in=ids).order_by("pk")
                        .defer(*self.list_deferred))
            extra = self.operation_rows_context(request, op, rows)
        form = op.form(request.POST if request.method == "POST" else None,
                       initial=self.operation_initial(op))
        if request.method == "POST" and form.is_valid():
            self.check_posted_fields(request, rows, op)
            if len(rows) < len(ids):
                self.message_user(request, f"{len(ids) - len(rows)} selected row(s) were not "
                                  "found in your scopes and were left alone.", messages.WARNING)
            for row in rows:
                self.perform(request, op, row, form.cleaned_data)
            return HttpResponseRedirect(self._after_operation_url(request))
        context = {
            **self.admin_site.each_context(request),
            "title": f"{op.title}: confirm",
            "opts": self.opts,
            "operation": op,
            "rows": rows,
            "missing": len(ids) - len(rows),
            # Rows the detail page would not offer this operation for (its state or reason):
            # the page says so before the POST, so a mixed selection is not read as all-done.
            "not_offered": [row for row in rows if not op.applies_to(row)],
            "form": form,
            "ids": ",".join(str(r.pk) for r in rows),
            "scope_param": scoping.SCOPE_PARAM,
            "scope": request.GET.get(scoping.SCOPE_PARAM, ""),
            "next": request.GET.get("next") or request.POST.get("next", ""),
            "cancel_url": self._after_operation_url(request),
            **extra,
        }
        return TemplateResponse(request, op.template or self.operation_template, context)

    def operation_rows_context(self, request, op: Operation, rows) -> dict:
        return {}

    #: The per-row fields the confirmation page always posts (``{pk}``: the row's id).
    posted_per_row: tuple[str, ...] = ()

    def posted_fields_of(self, op: Operation | None) -> tuple[str, ...]:
        return self.posted_per_row

    def check_posted_fields(self, request, rows, op: Operation | None = None) -> None:
        """Refuse, before any row is handled, a POST that lacks a field our confirmation page
        always carries: it is not one of ours, and reading the missing value at POST time
        would skip the check it exists for (the stale-revision refusal, DS106). A 400 with
        DS406 that changes nothing, like a malformed selection."""
        for row in rows:
            for template in self.posted_fields_of(op):
                name = template.format(pk=row.pk)
                if request.POST.get(name, "") == "":
                    exc = InvalidArgument(f"{name} is missing: post the confirmation page as "
                                          "the admin renders it", field=name, got="")
                    raise BadRequest(refusal(exc))

    def operation_initial(self, op: Operation) -> dict:
        return {}

    def _after_operation_url(self, request) -> str:
        target = request.POST.get("next") or request.GET.get("next")
        if target and url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        ):
            return target
        url = reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_changelist")
        scope_id = request.GET.get(scoping.SCOPE_PARAM)
        return f"{url}?{urlencode({scoping.SCOPE_PARAM: scope_id})}" if scope_id else url

    def _report(self, request, label: str, call) -> None:
        """Run one API call for one row and report it; a refusal carries its diagnostic code."""
        try:
            outcome = call()
        except DurableError as exc:
            self.message_user(request, f"{label}: refused — {refusal(exc)}", messages.ERROR)
        else:
            self.message_user(request, f"{label}: {outcome or 'done.'}", messages.SUCCESS)


# ---------------------------------------------------------------- schedules
#: The suspensions whose one fix is a new generation through the public update path
#: (docs/admin.md "State or reason -> the one action that fixes it"). ``tz_rules_changed``:
#: the new generation binds the time-zone rules in force, what ``durable_tz_rules --apply``
#: does for every affected schedule at once.
REISSUE_REASONS = ("clock_jump", "unevaluable", "scope_generation_mismatch", "operator",
                   TZ_RULES_CHANGED)
#: How many next instants the re-issue confirmation page shows.
PREVIEW_COUNT = 5

SCHEDULE_OPERATIONS = {
    "suspend": Operation("suspend", "Suspend schedules", "suspend", "suspend_schedule",
                         SuspendForm, frozenset({"active"}), "Suspend…"),
    "release": Operation("release", "Release schedules after recovery", "release",
                         "release_schedule", ReleaseForm, frozenset({"suspended"}),
                         "Release after recovery…", frozenset({"runtime_epoch_mismatch"})),
    "reissue": Operation("reissue", "Re-issue schedules as a new generation", "re-issue",
                         "reissue_schedule", ReissueForm, frozenset({"suspended"}),
                         "Re-issue as a new generation…", frozenset(REISSUE_REASONS)),
    "pause": Operation("pause", "Pause schedules", "pause", "pause_schedule", PauseForm,
                       frozenset({"active"}), "Pause…"),
    "resume": Operation("resume", "Resume schedules", "resume", "pause_schedule", ResumeForm,
                        frozenset({"paused"}), "Resume…"),
    "trigger": Operation("trigger", "Run schedules now", "run now", "trigger_schedule",
                         TriggerForm, frozenset({"active", "paused"}), "Run now…"),
    "delete": Operation("delete", "Delete schedules", "delete", "delete_schedule", DeleteForm,
                        frozenset({"active", "suspended", "paused", "completed"}), "Delete…"),
}


class ScheduleOperations(_Operations):
    operations = SCHEDULE_OPERATIONS
    # The revision the page showed for each row: every schedule operation posts it.
    posted_per_row = ("revision-{pk}",)
    actions = ("suspend_selected", "release_selected", "pause_selected", "resume_selected",
               "delete_selected_schedules")

    def operations_for(self, request, obj) -> list[dict]:
        """As for every row, minus what the API would refuse right now (docs/admin.md): *Run
        now…* while the slot is held or buffer_all's instants wait (DS150), and *Re-issue…*
        when the stored spec cannot be read back (DS114: the fix is ``update(spec=...)``)."""
        refused = {"trigger": timeline.run_now_allowed, "reissue": timeline.reissue_possible}
        return [op for op in super().operations_for(request, obj)
                if op["name"] not in refused or refused[op["name"]](obj)]

    def has_suspend_permission(self, request):
        return self.has_operation_permission(request, self.operations["suspend"])

    def has_release_permission(self, request):
        return self.has_operation_permission(request, self.operations["release"])

    def has_delete_schedule_permission(self, request):
        return self.has_operation_permission(request, self.operations["delete"])

    @admin.action(description="Suspend selected schedules…", permissions=["suspend"])
    def suspend_selected(self, request, queryset):
        return _redirect_to_operation(self, request, queryset, "suspend")

    @admin.action(description="Release selected schedules after recovery…",
                  permissions=["release"])
    def release_selected(self, request, queryset):
        return _redirect_to_operation(self, request, queryset, "release")

    @admin.action(description="Delete selected schedules (terminal)…",
                  permissions=["delete_schedule"])
    def delete_selected_schedules(self, request, queryset):
        return _redirect_to_operation(self, request, queryset, "delete")

    def has_pause_permission(self, request):
        return self.has_operation_permission(request, self.operations["pause"])

    @admin.action(description="Pause selected schedules…", permissions=["pause"])
    def pause_selected(self, request, queryset):
        return _redirect_to_operation(self, request, queryset, "pause")

    @admin.action(description="Resume selected schedules…", permissions=["pause"])
    def resume_selected(self, request, queryset):
        return _redirect_to_operation(self, request, queryset, "resume")

    def operation_initial(self, op: Operation) -> dict:
        if op.name == "trigger":
            import uuid

            return {"request_id": f"admin:{uuid.uuid4()}"}
        return {}

    def operation_rows_context(self, request, op: Operation, rows) -> dict:
        if op.name != "reissue":
            return {}
        return {"previews": [(row, _preview(row)) for row in rows]}

    def perform(self, request, op: Operation, row, data: dict) -> None:
        from durable_schedule import schedules

        actor = request.user.get_username()
        label = f"{row.scope_id}/{row.schedule_id}"
        # The revision the operator saw on the confirmation page: a schedule changed since then
        # is refused (DS106 RevisionMismatch) instead of being changed unseen.
        # Never absent here: check_posted_fields refused a POST without it.
        try:
            expected = _posted_number(request, f"revision-{row.pk}")
        except DurableError as exc:
            self.message_user(request, f"{label}: refused — {refusal(exc)}", messages.ERROR)
            return
        if op.name == "suspend":
            def call():
                info = schedules.suspend(row.scope_id, row.schedule_id, data["reason"],
                                         actor=actor, expected_revision=expected)
                # suspend() returns a suspended or completed schedule unchanged (no error;
                # a paused one is refused, DS175).
                if info.revision == expected:
                    return f"unchanged, the schedule is {info.state}."
                return f"suspended (revision {info.revision})."
        elif op.name == "pause":
            def call():
                info = schedules.pause(row.scope_id, row.schedule_id, data["note"], actor=actor,
                                       expected_revision=expected)
                if info.revision == expected:
                    return f"unchanged, the schedule is {info.state}."
                return f"paused (revision {info.revision})."
        elif op.name == "resume":
            def call():
                info = schedules.resume(row.scope_id, row.schedule_id, actor=actor,
                                        catch_up=data["catch_up"], expected_revision=expected)
                return f"resumed (revision {info.revision}), next instant " \
                       f"{timeline.stamp(info.next_nominal_utc)}."
        elif op.name == "trigger":
            def call():
                run = schedules.trigger(row.scope_id, row.schedule_id, data["request_id"],
                                        actor=actor)
                done = "running now" if run.created else "already run for this request"
                return f"{done}: Work {run.work_id}."
        elif op.name == "reissue":
            def call():
                info = schedules.update(row.scope_id, row.schedule_id,
                                        expected_revision=expected, actor=actor)
                return f"re-issued as generation {info.generation}, now {info.state}, next " \
                       f"instant {timeline.stamp(info.next_nominal_utc)}."
        elif op.name == "release":
            def call():
                info = schedules.release_after_recovery(row.scope_id, row.schedule_id,
                                                        actor=actor, expected_revision=expected)
                return f"released after recovery, now {info.state} (revision {info.revision})."
        else:
            def call():
                info = schedules.delete(row.scope_id, row.schedule_id,
                                        expected_revision=expected, actor=actor)
                return f"deleted (revision {info.revision})."
        self._report(request, label, call)


# ---------------------------------------------------------------- Work
#: What the proof page posts as ``permit-<pk>`` for a row it showed no unresolved permit for.
NO_PERMIT = "none"
WORK_CONFIRM = "admin/durable_schedule/work_operation_confirm.html"
WORK_OPERATIONS = {
    "proof": Operation("proof", "Record proof for suspended Work", "record proof",
                       "record_work_proof", ProofForm, frozenset({"suspended"}),
                       "Record proof…"),
    "resume_work": Operation("resume_work", "Resume Work after deploying its definition",
                             "resume", "resume_work", ReleaseForm, frozenset({"suspended"}),
                             "Resume…", frozenset({"unknown_definition", "reconciler_missing"}),
                             WORK_CONFIRM),
    # Running Work is offered only once its lease has ended by the database clock, what
    # work.cancel allows (WorkOperations.operations_for, cancel_verdict).
    "cancel_work": Operation("cancel_work", "Cancel Work", "cancel", "cancel_work",
                             CancelWorkForm, frozenset({"pending", "suspended", "running"}),
                             "Cancel…", None, WORK_CONFIRM),
}


def lease_lapsed(row, now) -> bool:
    """Running Work whose lease has ended by the database clock ``now`` (work.cancel's rule:
    the lease end is exclusive)."""
    return row.state == "running" and (row.lease_expires_at is None
                                       or row.lease_expires_at <= now)


def cancel_verdict(row, now) -> str:
    """What ``work.cancel`` would do with ``row`` at ``now``, as the confirmation page says it
    for each selected row (the call itself decides, on the row it locks)."""
    if row.state == "canceled":
        return "unchanged: already canceled"
    if row.state in ("pending", "suspended"):
        return "will be canceled"
    if row.state == "running":
        if lease_lapsed(row, now):
            return "will be canceled: its lease has ended (its permit stays unresolved)"
        return (f"refused ({WorkStateConflict.code}): running under a live lease until "
                f"{timeline.stamp(row.lease_expires_at)}")
    return f"refused ({WorkStateConflict.code}): the Work is {row.state} (terminal)"


class WorkOperations(_Operations):
    operations = WORK_OPERATIONS
    actions = ("record_proof_selected", "cancel_selected_work")
    operation_template = "admin/durable_schedule/proof_confirm.html"

    def operations_for(self, request, obj) -> list[dict]:
        """As for every row, minus what the API would refuse right now (docs/admin.md):
        *Cancel…* for running Work whose lease still holds by the database clock (DS217), and
        *Record proof…* for suspended Work without an unresolved admitted permit (a Work
        suspended before any admission, say ``unknown_definition``: there is no effect to
        prove, and record_proof refuses it)."""
        offered = super().operations_for(request, obj)
        if obj.state == "running" and not lease_lapsed(obj, timeline.database_now(request)):
            offered = [op for op in offered if op["name"] != "cancel_work"]
        if any(op["name"] == "proof" for op in offered) and \
                timeline.unresolved_permit(obj) is None:
            offered = [op for op in offered if op["name"] != "proof"]
        return offered

    def has_record_work_proof_permission(self, request):
        return self.has_operation_permission(request, self.operations["proof"])

    def has_cancel_work_permission(self, request):
        return self.has_operation_permission(request, self.operations["cancel_work"])

    @admin.action(description="Cancel selected Work (terminal)…", permissions=["cancel_work"])
    def cancel_selected_work(self, request, queryset):
        return _redirect_to_operation(self, request, queryset, "cancel_work")

    @admin.action(description="Record Applied / NotApplied proof for selected Work…",
                  permissions=["record_work_proof"])
    def record_proof_selected(self, request, queryset):
        return _redirect_to_operation(self, request, queryset, "proof")

    def posted_fields_of(self, op: Operation | None) -> tuple[str, ...]:
        # The proof page names, per row, the permit the proof resolves (NO_PERMIT: none).
        return ("permit-{pk}",) if op is not None and op.name == "proof" else ()

    def operation_rows_context(self, request, op, rows) -> dict:
        if op.name == "cancel_work":
            now = timeline.database_now(request)
            return {"verdicts": {row.pk: cancel_verdict(row, now) for row in rows}}
        if op.name != "proof":
            return {}
        # The permit each proof resolves: the most recent unresolved admitted one
        # (docs/protocol/work.md).
        permits = {row.pk: timeline.unresolved_permit(row) for row in rows}
        return {"proof_rows": [(row, permits[row.pk]) for row in rows]}

    def perform(self, request, op: Operation, row, data: dict) -> None:
        from durable_schedule import work

        actor = request.user.get_username()
        label = f"{row.scope_id}/{row.work_id}"
        if op.name in ("resume_work", "cancel_work"):
            call_api = work.resume if op.name == "resume_work" else work.cancel

            def call():
                state = call_api(row.scope_id, row.work_id, actor=actor)
                if op.name == "cancel_work" and row.state == "canceled":
                    # work.cancel changes nothing for canceled Work (no history either).
                    return "unchanged, the Work was already canceled."
                return f"now {state}."

            self._report(request, label, call)
            return
        outcome = data["outcome"]
        # The permit the confirmation page named: if another one is the most recent unresolved
        # permit by now, the API refuses (DS213) instead of resolving a permit nobody looked at.
        if request.POST.get(f"permit-{row.pk}") == NO_PERMIT:
            # The page showed no unresolved permit: any permit there is now, nobody looked at.
            exc = ProofRefused("the confirmation page showed no unresolved permit to resolve",
                               work_id=str(row.work_id))
            self.message_user(request, f"{label}: refused — {refusal(exc)}", messages.ERROR)
            return
        try:
            expected = _posted_number(request, f"permit-{row.pk}")
        except DurableError as exc:
            self.message_user(request, f"{label}: refused — {refusal(exc)}", messages.ERROR)
            return

        def call():
            kwargs = {"result": data.get("result")} if outcome == "applied" else {}
            proof = work.record_proof(row.scope_id, row.work_id, outcome, actor=actor,
                                      expected_permit_no=expected, **kwargs)
            text = (f"{outcome} recorded for permit #{proof.permit_no} (attempt "
                    f"{proof.permit_attempt}); the Work is now {proof.state}")
            if proof.unresolved_permits:
                text += f", {proof.unresolved_permits} unresolved permit(s) remain"
            return text + "."

        self._report(request, label, call)


def _preview(row) -> dict:
    """What a re-issue would schedule: the next instants of the stored spec from now (the
    database clock), or why it cannot be re-issued unchanged."""
    from durable_schedule import schedules
    from durable_schedule.evaluation import bounds as bounding
    from durable_schedule.evaluation.timeline import next_instant_after

    info = schedules.get(row.scope_id, row.schedule_id)
    if info.spec is None:
        return {"error": "the stored spec cannot be read back: re-issue it with "
                         "schedules.update(spec=...) from code"}
    now = timeline.database_now()
    # A new generation is accepted now; its cursor is max(cursor, now) (schedules.update), and
    # max_runs counts the runs of every generation (docs/schedules.md "Bounds and limits").
    after, found = max(info.cursor_utc, now), []
    wanted = PREVIEW_COUNT
    if info.max_runs is not None:
        left = bounding.runs_left(bounding.Bounds(max_runs=info.max_runs),
                                  timeline.scheduled_runs(row.scope_id, row.schedule_id))
        wanted = min(wanted, left)
    while len(found) < wanted:
        nxt = next_instant_after(info.spec, now, after)
        if nxt is None or (info.end_at is not None and nxt > info.end_at):
            break
        found.append(timeline.stamp(nxt))
        after = nxt
    return {"instants": found, "spec": timeline.describe_spec(info.spec)}
