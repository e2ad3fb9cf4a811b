"""One fixture, parametrised over every durable backend: the contract suite in this
folder runs unchanged against each of them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from oqronkit import DurablePlane
from oqronkit.backends.memory import MemoryDurableStore

# "sqlite-3.12.1": SQLite through the connection class Python 3.12.0/3.12.1 get
# (backends/sqlite_compat.py), so its parameter binding passes the contract on any version.
BACKENDS = ["memory", "sqlite", "sqlite-3.12.1", "postgres", "redis"]


def make_store(name: str, request: pytest.FixtureRequest, tmp_path) -> object:
    if name == "memory":
        return MemoryDurableStore()
    if name == "sqlite-3.12.1":
        from oqronkit.backends import sqlite_conn
        from oqronkit.backends.sqlite_compat import connection_factory

        request.getfixturevalue("monkeypatch").setattr(sqlite_conn, "connection_factory",
                                                       lambda: connection_factory((3, 12, 1)))
        name = "sqlite"
    if name == "sqlite":
        from oqronkit.backends.sqlite import SQLiteDurableStore

        return SQLiteDurableStore(str(tmp_path / "durable.sqlite3"))
    if name == "redis":
        from oqronkit.backends.redis import RedisDurableStore
        from tests.services import drop_redis_project, require_redis

        url = require_redis()
        project = request.getfixturevalue("scope_names")[0]
        request.addfinalizer(lambda: drop_redis_project(url, project))  # only this test's keys
        return RedisDurableStore(url)
    from oqronkit.backends.postgres import PostgresDurableStore

    return PostgresDurableStore(request.getfixturevalue("pg_schema_url"))


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def durable(backend_name: str, request: pytest.FixtureRequest, tmp_path, scope_names) -> Iterator[DurablePlane]:
    store = make_store(backend_name, request, tmp_path)
    project, environment = scope_names
    plane = DurablePlane(store, project=project, environment=environment, max_record_bytes=64 * 1024)
    plane.start()
    try:
        yield plane
    finally:
        plane.close()


@pytest.fixture
def fresh_schema_url() -> Iterator[str]:
    """A Postgres schema of this test only (no tables yet), dropped afterwards: for
    tests of schema creation and of per-table counters."""
    import psycopg

    from tests.services import require_postgres, unique_name, with_search_path

    base = require_postgres()
    schema = unique_name("oqron_pgspec")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')  # generated name, not user input
    try:
        yield with_search_path(base, schema)
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
