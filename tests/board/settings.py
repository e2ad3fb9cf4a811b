"""Settings for the test suite: the project's settings plus two databases shared with
the engine, so one pytest run reads the engine's rows through the ORM on both SQLite and
Postgres.

- ``default`` is SQLite with a *file* test database: pytest-django's default in-memory
  test database could not be opened by the engine's own connection.
- ``postgres`` points at the ``test`` Postgres database with a search path private to
  this process (one schema per xdist worker). pytest-django never sets it up (no test
  asks for it with ``databases=``); the fixtures in ``tests/board/conftest.py`` create
  and drop the schema, and the engine creates its tables there.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from oqronboard.settings import *  # noqa: F403
from oqronkit.contrib.django.databases import django_database
from tests.services import POSTGRES_URL, unique_name, with_search_path

# Tests pick the engine they need with the `settings` fixture; the in-process engine
# keeps view tests away from the SQLite file pytest-django holds in a transaction.
OQRON: dict[str, object] = {"MODE": "memory"}
# Pages read afresh on every request; test_shared_cache.py turns the sharing on.
OQRON_BOARD_CACHE_SECONDS = 0.0
# The suite logs in through the form far more than ten times a minute from 127.0.0.1;
# test_login_rate_limit.py sets the real limits.
OQRON_LOGIN_RATE_LIMIT = OQRON_LOGIN_ADDRESS_RATE_LIMIT = (100_000, 60)

_TEST_SQLITE = Path(tempfile.gettempdir()) / f"oqronboard-test-{os.getpid()}.sqlite3"
PG_TEST_SCHEMA = unique_name("oqron_board")

DATABASES = {
    "default": {
        **django_database(f"sqlite:///{_TEST_SQLITE}"),
        "TEST": {"NAME": str(_TEST_SQLITE)},
    },
    "postgres": django_database(with_search_path(POSTGRES_URL, PG_TEST_SCHEMA)),
}
DATABASES["postgres"]["OPTIONS"]["connect_timeout"] = 5

STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Fast hashing: tests create users, they do not test password storage.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Serve static files from the finders, without collectstatic (and without WhiteNoise's
# warning about the missing STATIC_ROOT, which filterwarnings=error would turn fatal).
WHITENOISE_AUTOREFRESH = True
WHITENOISE_USE_FINDERS = True
