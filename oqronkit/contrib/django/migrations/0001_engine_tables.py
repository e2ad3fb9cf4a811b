"""The engine's tables (oqron_records, oqron_jobs, oqron_runs and, in postgres and sqlite
modes, the hot plane's) in the database of ``OQRON["DATABASE_ALIAS"]``."""

from typing import Any

from django.db import migrations


def create_engine_tables(apps: Any, schema_editor: Any) -> None:
    from oqronkit.contrib.django.schema import create_tables

    create_tables(schema_editor.connection.alias)


class Migration(migrations.Migration):
    # The engine opens its own connection to the same database: on SQLite a migration
    # transaction would hold the write lock it waits for.
    atomic = False
    initial = True
    dependencies = []
    operations = [
        # Never dropped on reverse: the tables hold jobs and history.
        migrations.RunPython(create_engine_tables, migrations.RunPython.noop, elidable=False),
    ]
