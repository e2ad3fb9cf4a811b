from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.services import require_postgres, unique_name, with_search_path


@pytest.fixture(scope="session")
def pg_schema_url() -> Iterator[str]:
    """A Postgres URL whose search path is a schema private to this test session, so
    sessions (and xdist workers) never see each other's tables. Dropped at the end."""
    import psycopg

    base = require_postgres()
    schema = unique_name("oqron_test")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')  # schema name is ours, not user input
    try:
        yield with_search_path(base, schema)
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[object]:
    """A local Redis Cluster (3 masters, a replica each) for this session; see
    tests/redis_cluster.py. Skips without redis-server, fails under CI=true."""
    from tests.redis_cluster import local_cluster

    with local_cluster() as cluster:
        yield cluster


@pytest.fixture
def scope_names() -> tuple[str, str]:
    """A fresh (project, environment) so tests sharing a database never collide."""
    return f"p-{uuid.uuid4().hex[:10]}", "test"
