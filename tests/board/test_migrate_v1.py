"""``manage.py oqron_migrate_v1`` against a realistic v1 ``oqron_kv`` table, on SQLite and
Postgres: the engine refuses the database, a dry run counts and writes nothing, --apply
copies, a second --apply copies nothing new, and oqron_kv is never touched."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from django.core.management import CommandError, call_command
from django.db import connections

import oqronkit
from oqronboard.jobs.models import JobRecord
from oqronkit import DurablePlane, LegacyLayoutDetected
from oqronkit.contrib.django import engine
from tests.board.conftest import SharedDatabase
from tests.legacy_fixture import (
    CREATED_MS,
    DUE_MS,
    EXPECTED_SKIPPED,
    LAST_RUN_MS,
    NEXT_RUN_MS,
    expected_counts,
    v1_rows_as_json,
)

# The v1 table as each database held it (the v1 toolkit named the value column "data").
CREATE = {
    "sqlite": "CREATE TABLE oqron_kv (namespace TEXT NOT NULL, id TEXT NOT NULL, {col} TEXT NOT NULL,"
              " {created} PRIMARY KEY (namespace, id))",
    "postgresql": "CREATE TABLE oqron_kv (namespace TEXT NOT NULL, id TEXT NOT NULL, {col} JSONB NOT NULL,"
                  " {created} PRIMARY KEY (namespace, id))",
}
CREATED_AT = {
    "sqlite": "created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP,",
    "postgresql": "created_at TIMESTAMPTZ NOT NULL DEFAULT now(),",
}
INSERT = {
    "sqlite": "INSERT INTO oqron_kv (namespace, id, {col}) VALUES (%s, %s, %s)",
    "postgresql": "INSERT INTO oqron_kv (namespace, id, {col}) VALUES (%s, %s, %s::jsonb)",
}


@dataclass(frozen=True)
class V1Database:
    """A shared database holding a v1 table for two prefixed scopes and the default one."""

    db: SharedDatabase
    shop: tuple[str, str]
    blog: tuple[str, str]
    rows: list[tuple[str, str, str]]

    @property
    def default(self) -> tuple[str, str]:
        return (self.db.project, self.db.environment)

    def expected(self) -> dict[tuple[str, str, str], int]:
        return expected_counts(self.shop, self.blog, self.default)

    def plane(self, scope: tuple[str, str]) -> DurablePlane:
        return self.db.plane.scoped(project=scope[0], environment=scope[1])

    def migrate(self, *args: str) -> str:
        out = io.StringIO()
        call_command("oqron_migrate_v1", *args, database=self.db.alias, stdout=out, batch_size=4)
        return out.getvalue()

    def v1_contents(self) -> list[tuple[str, str, object]]:
        with connections[self.db.alias].cursor() as cursor:
            cursor.execute("SELECT namespace, id, value FROM oqron_kv ORDER BY namespace, id")
            return [(ns, id, json.loads(v) if isinstance(v, str) else v) for ns, id, v in cursor.fetchall()]


def create_v1_table(alias: str, rows: list[tuple[str, str, str]], *, col: str = "value",
                    created_at: bool = True) -> None:
    connection = connections[alias]
    vendor = connection.vendor
    with connection.cursor() as cursor:
        cursor.execute(CREATE[vendor].format(col=col, created=CREATED_AT[vendor] if created_at else ""))
        cursor.executemany(INSERT[vendor].format(col=col), rows)


def drop_v1_table(alias: str) -> None:
    # The database is shared with the other board tests: leaving oqron_kv behind would
    # make every later engine start refuse.
    with connections[alias].cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS oqron_kv")


@pytest.fixture
def v1(shared_db: SharedDatabase) -> Iterator[V1Database]:
    # Fresh project names per test: the engine's tables outlive the test on Postgres.
    shop, blog = (f"{shared_db.project}-shop", "production"), (f"{shared_db.project}-blog", "staging")
    rows = v1_rows_as_json(shop, blog)
    create_v1_table(shared_db.alias, rows)
    try:
        yield V1Database(shared_db, shop, blog, rows)
    finally:
        drop_v1_table(shared_db.alias)


def table_line(*cells: object) -> re.Pattern[str]:
    return re.compile(r"^" + r"\s+".join(re.escape(str(c)) for c in cells) + r"$", re.MULTILINE)


def test_the_engine_refuses_a_database_with_oqron_kv(v1: V1Database):
    plane = oqronkit.open_durable(engine.get_config(), start=False)
    try:
        with pytest.raises(LegacyLayoutDetected) as caught:
            plane.start()
    finally:
        plane.close()
    message = str(caught.value)
    assert "'oqron_kv'" in message and "v1 single-table layout" in message          # what it found
    assert "never reads oqron_kv" in message and "pending jobs" in message           # why it matters
    assert "python manage.py oqron_migrate_v1 --apply" in message                    # what to do
    engine.reset()
    with pytest.raises(LegacyLayoutDetected):
        engine.get_durable()  # the board's own entry point refuses too


def test_dry_run_prints_counts_per_kind_and_writes_nothing(v1: V1Database):
    output = v1.migrate()
    assert "would write" in output
    for (project, environment, kind), count in v1.expected().items():
        assert table_line(project, environment, kind, count).search(output), (project, kind, output)
    assert table_line("total", sum(v1.expected().values())).search(output)
    for reason, count in EXPECTED_SKIPPED.items():
        assert f"{count}  {reason}" in output
    assert "Dry run: nothing was written. Re-run with --apply" in output
    for scope in (v1.shop, v1.blog, v1.default):
        assert v1.plane(scope).count() == 0
    assert v1.v1_contents() == sorted((ns, id, json.loads(v)) for ns, id, v in v1.rows)


def test_apply_copies_jobs_dead_letters_runs_and_pointers(v1: V1Database):
    output = v1.migrate("--apply")
    total = sum(v1.expected().values())
    assert f"Done: {total} written, 0 already present" in output
    assert "left untouched" in output and "DROP TABLE oqron_kv" in output
    assert "ACKNOWLEDGE_V1_LAYOUT" in output
    for (project, environment, kind), count in v1.expected().items():
        assert table_line(project, environment, kind, count, 0).search(output), (project, kind, output)
        assert v1.plane((project, environment)).count(kind=kind) == count

    shop = v1.plane(v1.shop)
    waiting = shop.get("queue_job:emails", "j-wait")
    assert waiting.record_kind == "job" and waiting.value["status"] == "waiting"
    assert waiting.value["createdAt"] == CREATED_MS
    active = shop.get("queue_job:emails", "j-active").value
    assert active["status"] == "waiting" and active["workerId"] is None
    delayed = shop.get("queue_job:emails", "j-delay").value
    assert delayed["status"] == "delayed" and delayed["runAt"] == DUE_MS
    dead = shop.get("queue_dlq:emails", "j-failed")
    assert dead.record_kind == "dlq" and dead.value["lastError"]["message"] == "SMTP 550 mailbox unavailable"
    assert shop.get("queue_job:emails", "j-failed") is None
    pointer = shop.get("cron_durable", "nightly")
    assert pointer.record_kind == "control"
    assert (pointer.value["nextRunAt"], pointer.value["lastRunAt"]) == (NEXT_RUN_MS, LAST_RUN_MS)
    assert shop.get("cron", "nightly").value["expression"] == "0 3 * * *"
    done = shop.get("runs", "j-done").value
    assert (done["status"], done["output"], done["startedAt"]) == ("completed", {"rows": 42}, CREATED_MS)
    assert shop.get("queue", "emails").value["paused"] is True
    assert v1.plane(v1.default).get("queue_job:emails", "d-wait").value["status"] == "waiting"
    # The board sees them through its unmanaged model.
    board = JobRecord.objects.using(v1.db.alias).scoped(*v1.shop)
    assert board.jobs("emails").count() == 3 and board.dead_letters("emails").count() == 1


def test_a_second_apply_writes_nothing_new(v1: V1Database):
    v1.migrate("--apply")
    output = v1.migrate("--apply")
    total = sum(v1.expected().values())
    assert f"Done: 0 written, {total} already present" in output
    for (project, environment, kind), count in v1.expected().items():
        assert table_line(project, environment, kind, 0, count).search(output)
        assert v1.plane((project, environment)).count(kind=kind) == count


def test_oqron_kv_keeps_every_row(v1: V1Database):
    before = v1.v1_contents()
    v1.migrate("--apply")
    v1.migrate("--apply")
    assert v1.v1_contents() == before
    assert len(before) == len(v1.rows)


def test_the_v1_toolkits_own_column_names_are_read_too(shared_db: SharedDatabase):
    # The v1 toolkit's table: the value column is "data"; this copy has no created_at.
    shop, blog = (f"{shared_db.project}-shop", "production"), (f"{shared_db.project}-blog", "staging")
    create_v1_table(shared_db.alias, v1_rows_as_json(shop, blog), col="data", created_at=False)
    try:
        out = io.StringIO()
        call_command("oqron_migrate_v1", "--apply", database=shared_db.alias, stdout=out)
    finally:
        drop_v1_table(shared_db.alias)
    total = sum(expected_counts(shop, blog, (shared_db.project, shared_db.environment)).values())
    assert f"Done: {total} written" in out.getvalue()


def test_no_v1_table_is_a_clear_error(shared_db: SharedDatabase):
    with pytest.raises(CommandError, match="There is no table named 'oqron_kv'"):
        call_command("oqron_migrate_v1", database=shared_db.alias, stdout=io.StringIO())


def test_a_mode_without_a_sql_durable_plane_is_refused(settings):
    settings.OQRON = {"MODE": "memory"}
    with pytest.raises(CommandError, match="no SQL durable plane"):
        call_command("oqron_migrate_v1", stdout=io.StringIO())


def test_reading_one_database_and_writing_another_is_refused(settings):
    settings.OQRON = {"MODE": "sqlite"}  # the engine on the default alias
    with pytest.raises(CommandError, match="'postgres' is not the engine's durable database"):
        call_command("oqron_migrate_v1", database="postgres", stdout=io.StringIO())


def test_batch_size_must_be_positive(settings):
    with pytest.raises(CommandError, match="--batch-size must be at least 1"):
        call_command("oqron_migrate_v1", batch_size=0, stdout=io.StringIO())
