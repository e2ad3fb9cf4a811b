"""Fixtures joining the two products: the engine writes, Django's ORM reads the same
database (SQLite file or a private Postgres schema)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.db import connections

from oqronkit import DurablePlane
from oqronkit.contrib.django import engine
from oqronkit.contrib.django.databases import django_database
from tests.services import POSTGRES_URL, require_postgres, with_search_path


@dataclass(frozen=True)
class SharedDatabase:
    """An engine plane and the Django alias that reads the same tables."""

    alias: str
    plane: DurablePlane
    project: str
    environment: str


@pytest.fixture(scope="session")
def board_pg_url() -> Iterator[str]:
    """Create the schema the ``postgres`` alias searches (tests/board/settings.py) and
    drop it at the end; fails under CI=true when Postgres is down, skips otherwise."""
    import psycopg

    require_postgres()
    schema = django_settings.PG_TEST_SCHEMA
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')  # our generated name
    try:
        yield with_search_path(POSTGRES_URL, schema)
    finally:
        connections["postgres"].close()
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(scope="session")
def default_test_database(request: pytest.FixtureRequest, django_db_blocker) -> Iterator[None]:
    """Django's test database on the default alias, which holds the board's logins.
    pytest-django sets up only the aliases that collected tests mark, and the Postgres
    variants carry no mark: run without any SQLite test, the default had no tables."""
    from django.test.utils import setup_databases, teardown_databases

    request.getfixturevalue("django_db_setup")
    with django_db_blocker.unblock():
        if "django_content_type" in connections["default"].introspection.table_names():
            yield
            return
        created = setup_databases(verbosity=0, interactive=False, aliases={"default"})
    try:
        yield
    finally:
        with django_db_blocker.unblock():
            teardown_databases(created, verbosity=0)


@pytest.fixture(
    params=[
        # The engine writes through its own connection, so the SQLite test database must
        # not be held in a wrapping test transaction: a transactional test, marked here
        # because pytest-django reads the marker before any fixture runs.
        pytest.param("sqlite", marks=pytest.mark.django_db(transaction=True)),
        "postgres",
    ]
)
def shared_db(
    request: pytest.FixtureRequest, settings, django_db_blocker, scope_names: tuple[str, str]
) -> Iterator[SharedDatabase]:
    """The engine (through ``oqronkit.contrib.django.engine``) and Django on one database.

    SQLite: the file test database of the ``default`` alias. Postgres: the ``postgres``
    alias, which pytest-django does not manage, so database access is unblocked here.
    """
    if request.param == "sqlite":
        yield from _shared("default", sqlite_test_url(), "sqlite", settings, django_db_blocker, scope_names)
    else:
        url = request.getfixturevalue("board_pg_url")
        request.getfixturevalue("default_test_database")
        yield from _shared("postgres", url, "postgres", settings, django_db_blocker, scope_names)


@pytest.fixture
def sqlite_shared_db(settings, django_db_blocker, scope_names: tuple[str, str]) -> Iterator[SharedDatabase]:
    """``shared_db`` on SQLite only, for tests of pages that read the default alias.
    The test must be marked ``@pytest.mark.django_db(transaction=True)``."""
    yield from _shared("default", sqlite_test_url(), "sqlite", settings, django_db_blocker, scope_names)


def sqlite_test_url() -> str:
    """The SQLite test database as an engine URL (valid once pytest-django set it up)."""
    return f"sqlite:///{connections['default'].settings_dict['NAME']}"


def _shared(
    alias: str, url: str, mode: str, settings: Any, django_db_blocker: Any, scope_names: tuple[str, str]
) -> Iterator[SharedDatabase]:
    project, environment = scope_names
    # The engine's tables live in the alias's database, which the board's views and admin read.
    settings.OQRON = {"MODE": mode, "DATABASE_ALIAS": alias, "PROJECT": project, "ENVIRONMENT": environment}
    with django_db_blocker.unblock():
        try:
            yield SharedDatabase(alias, engine.get_durable(), project, environment)
        finally:
            engine.reset()
            connections["postgres"].close()


@pytest.fixture
def database_alias(settings) -> Iterator[Any]:
    """``add(url)``: a Django alias for a database URL, for the length of the test, so a
    test can point the engine (``OQRON["DATABASE_ALIAS"]``) at any server."""
    added: list[str] = []

    def add(url: str) -> str:
        name = f"t{len(added)}_{uuid.uuid4().hex[:8]}"
        connections.settings[name] = connections.configure_settings(
            {"default": connections.settings["default"], name: django_database(url)})[name]
        added.append(name)
        return name

    yield add
    for name in added:
        connections[name].close()
        del connections[name]
        del connections.settings[name]
    engine.reset()


# The board fixture (two logged-in clients over shared_db) lives with the seed helpers,
# the three scopes of the per-scope access tests beside it.
from tests.board.scope_seed import scopes  # noqa: E402, F401
from tests.board.seed import board  # noqa: E402, F401
