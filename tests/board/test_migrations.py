"""The unmanaged models' state-only migrations never lag behind the models."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command


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
def test_migrations_create_no_durable_table():
    # The engine owns oqron_*; Django's migrations only record the models' state.
    out = io.StringIO()
    for app in ("runs", "jobs", "definitions"):
        call_command("sqlmigrate", app, "0001", stdout=out)
    assert "CREATE TABLE" not in out.getvalue()
