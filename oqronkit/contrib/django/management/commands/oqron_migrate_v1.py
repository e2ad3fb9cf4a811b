"""``manage.py oqron_migrate_v1``: copy the v1 ``oqron_kv`` table into the v2 tables.

Thin, like every command here: read the rows through Django's connection, hand them to
:func:`oqronkit.legacy.migrate_v1`, print the report. A dry run unless ``--apply``.
The engine refuses to start while ``oqron_kv`` exists; this command acknowledges the
v1 layout for its own run only, since copying it is exactly what it is for.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connections
from django.db.backends.base.base import BaseDatabaseWrapper

import oqronkit
from oqronkit import OqronConfig, OqronError
from oqronkit.legacy import LEGACY_TABLE, LegacyRow, MigrationReport, migrate_v1

from ... import engine

DEFAULT_BATCH_SIZE: Final = 500
# Fixed queries, chosen by which columns the table has (never built from input). The
# v1 toolkit named the value column "data"; the documented layout says "value".
_SELECT: Final[dict[tuple[str, bool], str]] = {
    ("value", True): "SELECT namespace, id, value, created_at FROM oqron_kv ORDER BY namespace, id",
    ("value", False): "SELECT namespace, id, value, NULL FROM oqron_kv ORDER BY namespace, id",
    ("data", True): "SELECT namespace, id, data, created_at FROM oqron_kv ORDER BY namespace, id",
    ("data", False): "SELECT namespace, id, data, NULL FROM oqron_kv ORDER BY namespace, id",
}


class Command(BaseCommand):
    help = (
        "Copy the v1 single-table layout (oqron_kv) into oqron_records, oqron_jobs and "
        "oqron_runs. A dry run unless --apply; re-running is safe (rows already present are "
        "left alone). oqron_kv itself is never changed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--apply", action="store_true", help="Write the rows (default: dry run).")
        parser.add_argument(
            "--batch-size", type=int, default=DEFAULT_BATCH_SIZE,
            help=f"Rows read and inserted per round trip (default {DEFAULT_BATCH_SIZE}).",
        )
        parser.add_argument(
            "--database", default=None,
            help="The Django database alias holding oqron_kv: the engine's (OQRON['DATABASE_ALIAS'], the default).",
        )

    def handle(self, *args: Any, apply: bool, batch_size: int, database: str | None, **options: Any) -> None:
        if batch_size < 1:
            raise CommandError(f"--batch-size must be at least 1, got {batch_size}.")
        config = _sql_config()
        database = _engine_alias(database)
        connection = connections[database]
        select = _select_for(connection)
        plane = _open_unstarted(config)
        try:
            report = migrate_v1(
                _read_rows(connection, select, batch_size),
                lambda project, environment: plane.scoped(project=project, environment=environment),
                default_project=config.project,
                default_environment=config.environment,
                apply=apply,
                batch_size=batch_size,
                max_record_bytes=config.max_record_bytes,
            )
        except (OqronError, DatabaseError) as exc:
            raise CommandError(f"The migration stopped: {exc}") from exc
        finally:
            plane.close()
        self._print(report, config)

    # -- output ------------------------------------------------------------------------

    def _print(self, report: MigrationReport, config: OqronConfig) -> None:
        self.stdout.write(
            f"Read {report.rows_read} row(s) from {LEGACY_TABLE}; rows without a project prefix "
            f"belong to {config.project}/{config.environment}."
        )
        self.stdout.write("")
        for line in _table(report):
            self.stdout.write(line)
        if report.skipped:
            self.stdout.write("")
            self.stdout.write(self.style.WARNING(f"Skipped {report.total_skipped} v1 row(s):"))
            for reason, count in sorted(report.skipped.items()):
                self.stdout.write(f"  {count:>6}  {reason}")
        self.stdout.write("")
        for line in _next_step(report):
            self.stdout.write(self.style.SUCCESS(line))


def _table(report: MigrationReport) -> list[str]:
    """The per-(project, environment, kind) counts as a plain-text table."""
    header: tuple[str, ...]
    body: list[tuple[str, ...]]
    total: tuple[str, ...]
    if report.applied:
        header = ("project", "environment", "kind", "written", "already present")
        body = [(p, e, k, str(w), str(a)) for p, e, k, _, w, a in report.rows()]
        total = ("total", "", "", str(report.total_written), str(report.total_present))
    else:
        header = ("project", "environment", "kind", "would write")
        body = [(p, e, k, str(n)) for p, e, k, n, _, _ in report.rows()]
        total = ("total", "", "", str(report.total_planned))
    rows = [header, *body, total]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:
        cells = [c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return [line(header), rule, *(line(r) for r in body), rule, line(total)]


def _next_step(report: MigrationReport) -> list[str]:
    if not report.applied:
        return [
            f"Dry run: nothing was written. Re-run with --apply to copy {report.total_planned} row(s) "
            "(rows already in the v2 tables are left alone, so re-running is safe).",
        ]
    return [
        f"Done: {report.total_written} written, {report.total_present} already present.",
        f"{LEGACY_TABLE} was left untouched. Once the board shows your jobs and schedules:",
        f"  1. drop it yourself: DROP TABLE {LEGACY_TABLE};",
        "  2. remove ACKNOWLEDGE_V1_LAYOUT from OQRON if you set it.",
        f"The engine refuses to start while {LEGACY_TABLE} exists (unless ACKNOWLEDGE_V1_LAYOUT is set).",
    ]


# -- the database --------------------------------------------------------------------


def _sql_config() -> OqronConfig:
    """The engine config, which must have a SQL durable plane (that is where oqron_kv is)."""
    try:
        config = engine.get_config()
    except OqronError as exc:
        raise CommandError(str(exc)) from exc
    if config.mode in engine.NON_SQL_MODES:
        raise CommandError(
            f"OQRON mode {config.mode!r} has no SQL durable plane to copy {LEGACY_TABLE} into. "
            "Set MODE to 'sqlite', 'postgres' or 'redis-postgres' (the database that holds "
            f"{LEGACY_TABLE}) and run the command again."
        )
    return config


def _engine_alias(given: str | None) -> str:
    """The alias to read oqron_kv from: the engine's, so the copy lands beside it."""
    alias = engine.database_alias()
    if given is not None and given != alias:
        raise CommandError(
            f"The Django database {given!r} is not the engine's durable database (OQRON['DATABASE_ALIAS'] is "
            f"{alias!r}): the command would read {LEGACY_TABLE} from one and write the copy into the other. "
            "Leave out --database, or point OQRON['DATABASE_ALIAS'] at the database that holds oqron_kv."
        )
    return alias


def _select_for(connection: BaseDatabaseWrapper) -> str:
    """The query for this oqron_kv's columns; a clear error when there is no such table."""
    try:
        with connection.cursor() as cursor:
            if LEGACY_TABLE not in connection.introspection.table_names(cursor):
                raise CommandError(
                    f"There is no table named {LEGACY_TABLE!r} in the database "
                    f"{connection.alias!r}: nothing to migrate. The engine only refuses to start "
                    "when that table exists, so there is nothing to do."
                )
            columns = {c.name for c in connection.introspection.get_table_description(cursor, LEGACY_TABLE)}
    except DatabaseError as exc:
        raise CommandError(f"Could not read the database {connection.alias!r}: {exc}") from exc
    value = "value" if "value" in columns else "data" if "data" in columns else None
    if value is None or not {"namespace", "id"} <= columns:
        raise CommandError(
            f"{LEGACY_TABLE} has the columns {sorted(columns)}, not the v1 layout "
            "(namespace, id, value or data, created_at)."
        )
    return _SELECT[(value, "created_at" in columns)]


def _read_rows(connection: BaseDatabaseWrapper, select: str, batch_size: int) -> Iterator[LegacyRow]:
    """Stream oqron_kv: a server-side cursor on Postgres, so memory stays flat."""
    with connection.chunked_cursor() as cursor:
        cursor.execute(select)
        while rows := cursor.fetchmany(batch_size):
            for namespace, id, value, created_at in rows:
                yield LegacyRow(namespace, id, value, created_at)


def _open_unstarted(config: OqronConfig) -> oqronkit.DurablePlane:
    """The durable plane, not started: the runner starts each scope with the v1 layout
    acknowledged (``engine.get_durable()`` would refuse, which is the point of it)."""
    try:
        return oqronkit.open_durable(config, start=False)
    except OqronError as exc:
        raise CommandError(str(exc)) from exc
