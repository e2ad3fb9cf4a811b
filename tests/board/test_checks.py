"""A bad OQRON value fails `manage.py check` with a clear message and no traceback."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from oqronkit.contrib.django import checks

BASE_DIR = Path(__file__).resolve().parents[2]


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run manage.py with the project's real settings and only the given OQRON_* vars."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OQRON_")}
    environ.update(env, DJANGO_SETTINGS_MODULE="oqronboard.settings", PYTHONWARNINGS="error")
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=BASE_DIR, env=environ,
        capture_output=True, text=True, timeout=120,
    )


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"OQRON_MODE": "bogus"}, "OQRON mode 'bogus' is not one of memory, sqlite, postgres"),
        ({"OQRON_PROJECT": "bad name!"}, "OQRON project 'bad name!' must be 1-100 characters"),
        ({"OQRON_ENVIRONMENT": "-dash-first"}, "OQRON environment '-dash-first' must be"),
        ({"OQRON_MODE": "postgres"}, "needs a postgresql database, but DATABASES['default'] is sqlite"),
        ({"OQRON_MODE": "redis-postgres", "OQRON_DATABASE_URL": "postgresql://u:secret@h/db"},
         "needs a Redis URL"),
    ],
    ids=["bogus-mode", "bad-project", "bad-environment", "postgres-with-sqlite-url", "no-redis-url"],
)
def test_check_fails_with_the_message_and_no_traceback(env, expected):
    result = manage("check", **env)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "oqron.E001" in output and expected in output, output
    assert "HINT: Fix the OQRON setting" in output
    assert "Traceback" not in output, output


def test_check_passes_on_a_valid_configuration(tmp_path):
    result = manage("check", OQRON_DATABASE_URL=f"sqlite:///{tmp_path / 'ok.sqlite3'}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_memory_and_redis_modes_warn_that_the_board_sees_no_jobs(settings):
    settings.OQRON = {"MODE": "memory"}
    assert [m.id for m in checks.check_oqron_config()] == ["oqron.W001"]
    settings.OQRON = {"MODE": "redis", "REDIS_URL": "redis://127.0.0.1:6379/0"}
    assert [m.id for m in checks.check_oqron_config()] == ["oqron.W001"]
    settings.OQRON = {"MODE": "sqlite"}
    assert checks.check_oqron_config() == []


@pytest.mark.parametrize(("oqron", "expected"), [
    ({"MODE": "postgres", "DATABASE_ALIAS": "warehouse"}, "OQRON['DATABASE_ALIAS'] is 'warehouse', which is not"),
    ({"MODE": "sqlite", "DATABASE_ALIAS": "postgres"}, "needs a sqlite database, but DATABASES['postgres'] is"),
    ({"MODE": "postgres"}, "needs a postgresql database, but DATABASES['default'] is sqlite"),
    ({"MODE": "postgres", "DATABASE_URL": "postgresql://h/db"}, "OQRON['DATABASE_URL'] is not used"),
])
def test_an_alias_the_mode_cannot_use_is_reported_with_the_setting(settings, oqron, expected):
    settings.OQRON = oqron
    found = checks.check_oqron_config()
    assert [m.id for m in found] == ["oqron.E001"] and expected in found[0].msg


def test_passwords_never_reach_the_check_output():
    result = manage("check", OQRON_MODE="sqlite", OQRON_DATABASE_URL="postgresql://u:hunter2@h/db")
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "oqron.E001" in output
    assert "hunter2" not in output and "DATABASES['default'] is postgresql" in output


def test_database_check_finds_the_v1_table(tmp_path):
    path = tmp_path / "v1.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE oqron_kv (k TEXT PRIMARY KEY, v TEXT)")
    conn.close()
    url = f"sqlite:///{path}"

    assert manage("check", OQRON_DATABASE_URL=url).returncode == 0  # database checks need --database
    result = manage("check", "--database", "default", OQRON_DATABASE_URL=url)
    assert result.returncode != 0
    assert "oqron.E002" in result.stderr and "oqron_migrate_v1 --apply" in result.stderr
    assert "Traceback" not in result.stderr


def test_database_check_is_quiet_without_the_v1_table(tmp_path):
    url = f"sqlite:///{tmp_path / 'v2.sqlite3'}"
    result = manage("check", "--database", "default", OQRON_DATABASE_URL=url)
    assert result.returncode == 0, result.stderr


# -- the same checks in-process (fast; settings overridden) ---------------------------


@pytest.mark.django_db
def test_bad_setting_fails_call_command_check(settings):
    settings.OQRON = {"MODE": "bogus"}
    with pytest.raises(SystemCheckError, match=r"oqron\.E001"):
        call_command("check")


def test_unknown_key_and_wrong_types_are_reported(settings):
    settings.OQRON = {"MODEE": "sqlite"}
    assert [m.id for m in checks.check_oqron_config()] == ["oqron.E001"]
    assert "Unknown OQRON setting 'MODEE'" in checks.check_oqron_config()[0].msg
    settings.OQRON = {"DATABASE_URL": 5}
    assert [m.id for m in checks.check_oqron_config()] == ["oqron.E001"]
    settings.OQRON = ["MODE", "sqlite"]
    assert "must be a dict" in checks.check_oqron_config()[0].msg


@pytest.mark.django_db
def test_v1_check_respects_the_acknowledgement(settings):
    from django.db import connection

    settings.OQRON = {"MODE": "sqlite"}  # the engine on the default alias's test database
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE oqron_kv (k TEXT PRIMARY KEY, v TEXT)")
    assert [m.id for m in checks.check_v1_layout(databases=["default"])] == ["oqron.E002"]
    assert checks.check_v1_layout(databases=None) == []
    settings.OQRON = {**settings.OQRON, "ACKNOWLEDGE_V1_LAYOUT": True}
    assert checks.check_v1_layout(databases=["default"]) == []
    settings.OQRON = {"MODE": "memory"}
    assert checks.check_v1_layout(databases=["default"]) == []
