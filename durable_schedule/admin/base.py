"""The base of every durable_schedule ModelAdmin: read-only, scoped, rendered in scope.

Every table of the store is a fact written by the runtime or the public API (docs/architecture.md
"admin: must not write outside the public API"). So no admin page may add, change or delete a row:
the three permissions are refused here for everyone, superusers included, and Django then shows
change pages read-only. Operations (suspend, release, delete, proof) are separate views in
:mod:`durable_schedule.admin.actions` that call the public API.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.contrib import admin
from django.contrib.admin.views.main import ERROR_FLAG, IGNORED_PARAMS, PAGE_VAR, ChangeList
from django.db.models import OuterRef, Subquery
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode

from durable_schedule import conf
from durable_schedule.admin import scoping
from durable_schedule.admin.filters import bad_parameter, checked_text
from durable_schedule.store.models import Scope

#: The change list's own query parameters (ordering, search, page, popup...), besides filters.
CHANGELIST_PARAMS = frozenset((*IGNORED_PARAMS, PAGE_VAR, ERROR_FLAG))


def _rendered(response):
    """Render a lazy TemplateResponse now, while the scoped read transaction is still open."""
    if isinstance(response, TemplateResponse) and not response.is_rendered:
        response.render()
    return response


#: The request of the admin page being rendered: list columns get only the row, and a link to
#: a page the user may not open must not be offered (a link that answers 403).
_RENDERING: ContextVar = ContextVar("durable_admin_request", default=None)


@contextmanager
def rendering(request) -> Iterator[None]:
    """Make ``request`` the page's request while the page is built and rendered."""
    token = _RENDERING.set(request)
    try:
        yield
    finally:
        _RENDERING.reset(token)


def can_view(request, model) -> bool:
    """Whether ``request``'s user may open ``model``'s admin pages (its view permission)."""
    model_admin = admin.site._registry.get(model)
    return model_admin is not None and model_admin.has_view_permission(request)


def viewable_models(request) -> dict[str, bool]:
    """``model_name -> may open its pages``, for templates that link between pages."""
    return {model._meta.model_name: can_view(request, model) for model in admin.site._registry
            if model._meta.app_label == "durable_schedule"}


def admin_link(model, pk, label, scope_id: str | None = None):
    """A link to a change page, carrying ``?scope=`` so it reads in that scope under RLS. The
    scope id is query-encoded: one with ``&``, ``+``, ``#`` or ``%`` would otherwise name
    another scope. The label alone when the page's user may not open that page."""
    request = _RENDERING.get()
    if request is not None and not can_view(request, model):
        return label
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[pk])
    if scope_id:
        url += f"?{urlencode({scoping.SCOPE_PARAM: scope_id})}"
    return format_html('<a href="{}">{}</a>', url, label)


def _is_uuid(term: str) -> bool:
    try:
        uuid.UUID(term)
    except ValueError:
        return False
    return True


class DeferringChangeList(ChangeList):
    """The change list of a page whose ``list_deferred`` JSON columns are not read."""

    def get_queryset(self, request, exclude_parameters=None):
        queryset = super().get_queryset(request, exclude_parameters)
        deferred = getattr(self.model_admin, "list_deferred", ())
        return queryset.defer(*deferred) if deferred else queryset


class ReadOnlyScopedAdmin(admin.ModelAdmin):
    """Read-only and filtered to the user's scopes; reads run in the page's scope."""

    #: The scope filter leads the change list filters; subclasses list their own after it.
    scope_filter = scoping.ScopeFilter
    #: How rows are restricted to visible scopes: through ``scope_id`` or a routing id.
    routed = False
    list_per_page = 50
    show_full_result_count = False

    # ------------------------------------------------------------ immutable facts
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        # Also what removes Django's bulk "delete selected" action: it requires this permission.
        return False

    #: A UUID column searched exactly when the search term is a UUID (``work_id``), else None.
    uuid_search_field: str | None = None
    #: JSON columns the change list never shows and need not read: a Work payload may be
    #: 32 MiB, and a page of fifty such rows would load them all for nothing.
    list_deferred: tuple[str, ...] = ()

    def get_changelist(self, request, **kwargs):
        return DeferringChangeList

    def get_search_results(self, request, queryset, search_term):
        # A text search on a UUID column would cast every row; a whole UUID is matched exactly
        # instead, and partial terms go to the ordinary search fields.
        term = search_term.strip()
        if self.uuid_search_field and _is_uuid(term):
            return queryset.filter(**{self.uuid_search_field: term}), False
        return super().get_search_results(request, queryset, search_term)

    # ------------------------------------------------------------ scope
    def get_queryset(self, request):
        # On the store's alias, where read_scope set the scope (not the default router's).
        queryset = super().get_queryset(request).using(conf.database_alias())
        if self.routed:
            return scoping.restrict_routed(queryset, request)
        return scoping.restrict(queryset, request)

    def get_list_filter(self, request):
        return (self.scope_filter, *super().get_list_filter(request))

    def filter_parameters(self, request) -> frozenset[str]:
        """The query parameters of this page's declared list filters."""
        return frozenset(getattr(spec, "parameter_name", None) or str(spec)
                         for spec in self.get_list_filter(request))

    def lookup_allowed(self, lookup, value, request=None):
        # Django asks this for every filter parameter of the query string: only the declared
        # list filters' own may reach the queryset, no other column lookup
        # (``?payload__contains=``, ``?scope_id__regex=``). changelist_view refuses the others
        # first, with DS406.
        return request is not None and lookup in self.filter_parameters(request)

    def check_changelist_params(self, request) -> None:
        """Refuse (400, DS406) a query parameter that is neither a declared filter nor one of
        the change list's own: Django would pass it to ``queryset.filter()`` as a lookup, which
        a crafted URL turns into a server error (NUL, a bad regex) or a probe of columns the
        page does not show."""
        filters = self.filter_parameters(request)
        for name in request.GET:
            if name in filters:
                # Checked here too: a filter without choices (no such rows) is never asked.
                for value in request.GET.getlist(name):
                    checked_text(name, value)
            elif name not in CHANGELIST_PARAMS:
                raise bad_parameter(name, request.GET.get(name, ""),
                                    "is not a filter of this page (filters: "
                                    f"{', '.join(sorted(filters))})")

    def changelist_view(self, request, extra_context=None):
        self.check_changelist_params(request)
        with scoping.read_scope(request) as scope_id, rendering(request):
            context = {**(extra_context or {}), **self.scope_context(request, scope_id)}
            return _rendered(super().changelist_view(request, context))

    def change_view(self, request, object_id, form_url="", extra_context=None):
        with scoping.read_scope(request) as scope_id, rendering(request):
            context = {**(extra_context or {}), **self.scope_context(request, scope_id),
                       "durable_can_view": viewable_models(request)}
            context.update(self.detail_context(request, object_id, scope_id))
            return _rendered(super().change_view(request, object_id, form_url, context))

    def history_view(self, request, object_id, extra_context=None):
        with scoping.read_scope(request):
            return _rendered(super().history_view(request, object_id, extra_context))

    def detail_context(self, request, object_id, scope_id) -> dict:
        """Extra template context of the change page (the timeline); none by default."""
        return {}

    def scope_context(self, request, scope_id) -> dict:
        seen = scoping.visibility(request)
        binds = not scoping.owner_bypasses_rls()
        return {
            "durable_scope": scope_id,
            "durable_scopes_all": seen.everything,
            "durable_scopes": sorted(seen.scopes) if seen.scopes is not None else None,
            # Under a binding RLS policy an unscoped page reads nothing: say why.
            "durable_rls_binds": binds,
            "durable_needs_scope": binds and scope_id is None,
        }


class RoutedReadOnlyAdmin(ReadOnlyScopedAdmin):
    """Payload-free queue rows have no scope id: they are scoped, and show their scope, through
    their routing id."""

    routed = True
    scope_filter = scoping.RoutedScopeFilter

    def get_queryset(self, request):
        scope = scoping.store_rows(Scope).filter(
            routing_id=OuterRef("scope_routing_id")).values("scope_id")
        return super().get_queryset(request).annotate(scope_name=Subquery(scope[:1]))

    @admin.display(description="scope", ordering="scope_name")
    def scope(self, obj):
        return obj.scope_name
