from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.docs.report import pytest_runtest_logreport, pytest_terminal_summary
from tests.services import require_postgres, unique_name, with_search_path

# The docs examples' summary (pages, blocks executed, skips), printed by the controller.
__all__ = ["pytest_runtest_logreport", "pytest_terminal_summary"]


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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep the "redis-cluster-postgres" mode to the queue suite's representative slice
    (and the topic wake-ups, the broadcast's one end-to-end user): every suite sharing
    MODES or the queue suite's `mode` fixture would run it otherwise, adding minutes that
    test the same hot-plane calls again."""
    dropped = [item for item in items if _cluster_outside_slice(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        kept = set(items) - set(dropped)
        items[:] = [item for item in items if item in kept]


def _cluster_outside_slice(item: pytest.Item) -> bool:
    from tests.engine.queue.conftest import CLUSTER_ALSO, CLUSTER_SLICE

    callspec = getattr(item, "callspec", None)
    if callspec is None or "redis-cluster-postgres" not in callspec.params.values():
        return False
    module = item.module.__name__ if item.module is not None else ""
    package, _, name = module.rpartition(".")
    if module in CLUSTER_ALSO:
        return False
    return package != "tests.engine.queue" or name not in CLUSTER_SLICE


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
