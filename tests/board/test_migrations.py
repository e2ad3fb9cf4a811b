"""The unmanaged models' state-only migrations never lag behind the models."""

from __future__ import annotations

import io
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.services import REDIS_URL, require_postgres, unique_name, with_search_path

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_makemigrations_is_clean(settings):
    # With a router configured makemigrations checks every alias's history, and the
    # postgres alias is outside this test's databases; the files are what is checked.
    settings.DATABASE_ROUTERS = []
    out = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exc:  # --check exits 1 when a migration is missing
        pytest.fail(
            "A model changed without its migration; run `python manage.py makemigrations` "
            f"and commit the state-only migration it writes (exit {exc.code}):\n{out.getvalue()}"
        )


@pytest.mark.django_db(transaction=True)  # the SQLite schema editor refuses a transaction
def test_the_board_models_migrations_create_no_table():
    # The engine owns oqron_*; the board's migrations only record its read-only models' state.
    out = io.StringIO()
    call_command("sqlmigrate", "oqronboard", "0003", stdout=out)
    assert "CREATE TABLE" not in out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_the_scope_grants_are_the_boards_one_table():
    out = io.StringIO()
    call_command("sqlmigrate", "oqronboard", "0004", stdout=out)
    assert out.getvalue().count("CREATE TABLE") == 1 and '"oqronboard_scopegrant"' in out.getvalue()


ENGINE_TABLES = {"oqron_records", "oqron_jobs", "oqron_runs"}
HOT_TABLES = {"oqron_hot_jobs", "oqron_hot_locks", "oqron_hot_kv"}


def migrate(env: dict[str, str], cwd: Path) -> str:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OQRON_")}
    result = subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "--noinput"], cwd=cwd,
                            env={**environ, **env, "DJANGO_SETTINGS_MODULE": "oqronboard.settings"},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_migrate_creates_the_engine_tables_in_sqlite(tmp_path):
    path = tmp_path / "fresh.sqlite3"
    out = migrate({"OQRON_DATABASE_URL": f"sqlite:///{path}"}, tmp_path)
    assert "oqronkit.0001_engine_tables... OK" in out
    with sqlite3.connect(path) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    assert tables >= ENGINE_TABLES | HOT_TABLES


@pytest.mark.parametrize(("mode", "hot"), [("postgres", True), ("redis-postgres", False)])
def test_migrate_creates_the_engine_tables_in_postgres(tmp_path, mode, hot):
    import psycopg

    base, schema = require_postgres(), unique_name("oqron_migrate")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')  # our generated name
    url = with_search_path(base, schema)
    try:
        migrate({"OQRON_MODE": mode, "OQRON_DATABASE_URL": url, "OQRON_REDIS_URL": REDIS_URL}, tmp_path)
        with psycopg.connect(url) as conn:
            tables = {name for (name,) in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
    assert tables >= ENGINE_TABLES and "auth_user" in tables
    assert (tables >= HOT_TABLES) is hot  # redis-postgres keeps its hot plane in Redis, never touched by migrate
