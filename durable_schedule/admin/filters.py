"""Change list filters over the store's text columns (the models declare no ``choices``: the
allowed values live in the SQL CHECK constraints, docs/protocol/storage.md)."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import BadRequest

from durable_schedule.errors import InvalidArgument

#: The lookup value that selects rows whose column is NULL.
NONE_VALUE = "__none__"
#: The longest filter value taken from a query string (the store's text columns hold less).
MAX_VALUE = 1000


def bad_parameter(name: str, value: str, why: str) -> BadRequest:
    """A 400 for a change list query parameter, worded like every refusal (DS406): a crafted
    URL changes nothing and never reaches the database as a query it would refuse."""
    exc = InvalidArgument(f"query parameter {name!r} {why}", field=name, got=value[:40])
    return BadRequest(f"{exc.code}: {exc.message}. {exc.next_action}")


def checked_text(name: str, value: str) -> str:
    """A free filter value: PostgreSQL text cannot hold NUL, and no stored value is longer."""
    if "\x00" in value or len(value) > MAX_VALUE:
        raise bad_parameter(name, value, f"must be text of at most {MAX_VALUE} characters "
                                         "without NUL")
    return value


class ChoicesFilter(admin.SimpleListFilter):
    """A filter over a fixed list of values (a CHECK constraint's list)."""

    field: str = ""
    values: tuple[str, ...] = ()
    none_label: str | None = None

    def lookups(self, request, model_admin):
        found = [(v, v) for v in self.values]
        if self.none_label:
            found.append((NONE_VALUE, self.none_label))
        return found

    def queryset(self, request, queryset):
        value = self.value()
        if not value:
            return queryset
        if value == NONE_VALUE and self.none_label:
            return queryset.filter(**{f"{self.field}__isnull": True})
        if value not in self.values:
            # Only the CHECK constraint's values exist: anything else is a crafted URL.
            raise bad_parameter(self.parameter_name, value,
                                f"must be one of {', '.join(self.values)}")
        return queryset.filter(**{self.field: value})


def choices_filter(title: str, field: str, values, none_label: str | None = None):
    """A ChoicesFilter subclass for ``field`` (Django wants a class per filter)."""
    return type(
        f"{field.title().replace('_', '')}Filter",
        (ChoicesFilter,),
        {"title": title, "parameter_name": field, "field": field, "values": tuple(values),
         "none_label": none_label},
    )


class DistinctValuesFilter(admin.SimpleListFilter):
    """A filter offering the distinct non-null values found in the user's visible rows."""

    field: str = ""
    limit = 50

    def lookups(self, request, model_admin):
        values = (
            model_admin.get_queryset(request)
            .exclude(**{f"{self.field}__isnull": True})
            .order_by(self.field)
            .values_list(self.field, flat=True)
            .distinct()[: self.limit]
        )
        return [(v, v) for v in values]

    def queryset(self, request, queryset):
        value = self.value()
        if not value:
            return queryset
        return queryset.filter(**{self.field: checked_text(self.parameter_name, value)})
