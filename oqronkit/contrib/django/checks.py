"""System checks: a bad ``OQRON`` value fails ``manage.py check``, not the first job.

Settings never raise on a bad value; these checks report it with the engine's own
message: an unknown key, a mode the alias cannot serve, an alias ``DATABASES`` lacks.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core import checks
from django.db import DatabaseError, connections

from oqronkit import ConfigurationError

from . import engine

LEGACY_TABLE = "oqron_kv"
CONFIG_HINT = (
    "Fix the OQRON setting (keys MODE, DATABASE_ALIAS, REDIS_URL, PROJECT, ENVIRONMENT, ...) or the "
    "OQRON_MODE, OQRON_REDIS_URL, OQRON_PROJECT and OQRON_ENVIRONMENT environment variables, which fill "
    "what OQRON leaves out (the tutorial, docs/tutorial/index.md)."
)


@checks.register("oqron")
def check_oqron_config(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """``oqron.E001`` for an invalid ``OQRON`` setting or ``OQRON_*`` variable;
    ``oqron.W001`` when the durable plane is not a database the board can read."""
    try:
        config = engine.get_config()
    except ConfigurationError as exc:
        return [checks.Error(str(exc), hint=CONFIG_HINT, id="oqron.E001")]
    if config.mode in engine.NON_SQL_MODES:
        return [
            checks.Warning(
                f"OQRON mode {config.mode!r} keeps the durable plane outside SQL, so the board's "
                "pages cannot see the engine's jobs and runs, and an add cannot join a transaction.",
                hint="Use mode 'sqlite', 'postgres' or 'redis-postgres' to browse jobs on the board.",
                id="oqron.W001",
            )
        ]
    return []


@checks.register("oqron", checks.Tags.database)
def check_v1_layout(
    app_configs: Iterable[Any] | None = None, databases: Iterable[str] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """``oqron.E002`` when the engine's database still has the v1 ``oqron_kv`` table.

    Database checks run only when asked for (``check --database default``,
    ``migrate``), since they connect.
    """
    alias = engine.database_alias()
    if not databases or alias not in databases:
        return []
    try:
        config = engine.get_config()
    except ConfigurationError:
        return []  # oqron.E001 reports it
    if config.mode in engine.NON_SQL_MODES or config.acknowledge_v1_layout:
        return []
    try:
        tables = connections[alias].introspection.table_names()
    except DatabaseError as exc:
        return [
            checks.Warning(
                f"Could not look for the v1 {LEGACY_TABLE!r} table: {exc}",
                hint=f"Check that the database of DATABASES[{alias!r}] is reachable.",
                id="oqron.W002",
            )
        ]
    if LEGACY_TABLE not in tables:
        return []
    return [
        checks.Error(
            f"The durable database still has the v1 {LEGACY_TABLE!r} table. The engine stores "
            "data in oqron_records, oqron_jobs and oqron_runs and refuses to start here, since "
            "it would ignore pending v1 jobs and reset every schedule pointer.",
            hint=(
                "Copy the v1 rows with `python manage.py oqron_migrate_v1 --apply` (run it "
                "without --apply for a dry run), or set OQRON = {'ACKNOWLEDGE_V1_LAYOUT': True} "
                "to start anyway."
            ),
            id="oqron.E002",
        )
    ]
