"""Forward-only migrations (docs/operations.md "Migrations are forward-only").

The store's SQL files create tables, functions, policies and grants that later files and the
running code build on; undoing a file would need its own reverse SQL, tested against every
later state, and would drop audit history. So no migration of this package can be reversed:
``migrate durable_schedule 0003`` must fail loudly and change nothing, instead of unmarking a
migration whose schema stays behind (the next ``migrate`` would then crash on "already
exists").

Every migration ends with :class:`RefuseReverse`. Django reverses a migration's operations last
to first, so this operation is the first one reversed, and it raises before any other operation
of the migration (or of any older migration) touches the database; the migration recorder is
not written either. It is marked reversible on purpose: Django's own check for irreversible
operations would otherwise raise first with a generic message that does not say why.
"""

from __future__ import annotations

from django.db.migrations.operations.base import Operation

from durable_schedule.errors import ForwardOnlyStore
from durable_schedule.store.sqlfiles import read

REASON = (
    "the durable_schedule store is forward-only: migration {name} cannot be reversed. "
    "Its SQL created tables, functions, row-level security and grants that newer migrations "
    "and the running code depend on, and reversing would destroy audit history. Nothing was "
    "changed. To go back, restore a database backup taken before the migration (then run "
    "`manage.py durable_recover --bump-epoch`, docs/operations.md \"Recovery after a "
    "restore\"); to remove the store entirely, drop its database or schema."
)


class RefuseReverse(Operation):
    """A no-op forwards; reversing raises ``ForwardOnlyStore`` (DS409), a Django
    ``IrreversibleError``, with :data:`REASON`."""

    reversible = True  # so Django reaches database_backwards, whose message says why
    reduces_to_sql = False
    atomic = True

    def __init__(self, migration_name: str) -> None:
        self.migration_name = migration_name

    def deconstruct(self):
        return (self.__class__.__qualname__, [self.migration_name], {})

    def state_forwards(self, app_label, state) -> None:
        return None

    def database_forwards(self, app_label, schema_editor, from_state, to_state) -> None:
        return None

    def database_backwards(self, app_label, schema_editor, from_state, to_state) -> None:
        raise ForwardOnlyStore(REASON.format(name=f"{app_label}.{self.migration_name}"),
                               migration=f"{app_label}.{self.migration_name}")

    def describe(self) -> str:
        return f"Refuse to reverse {self.migration_name} (the store is forward-only)"


def run_sql_file(filename: str):
    """One SQL file of store/sql, forwards. Its reverse is never reached: the migration's
    :class:`RefuseReverse` raises first."""
    from django.db import migrations

    return migrations.RunSQL(read(filename), reverse_sql=migrations.RunSQL.noop)
