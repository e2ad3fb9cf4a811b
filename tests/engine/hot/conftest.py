"""One fixture parametrised over every hot-plane backend: the contract suite in this
folder runs unchanged against each of them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from oqronkit.backends.memory_hot import MemoryHotPlane
from oqronkit.backends.types import Scope

HOT_BACKENDS = ["memory", "sqlite", "postgres", "redis"]


def make_hot(name: str, request: pytest.FixtureRequest, tmp_path):
    if name == "memory":
        return MemoryHotPlane()
    if name == "sqlite":
        from oqronkit.backends.sqlite_hot import SQLiteHotPlane

        return SQLiteHotPlane(str(tmp_path / "hot.sqlite3"))
    if name == "redis":
        from oqronkit.backends.redis import RedisHotPlane
        from tests.services import drop_redis_project, require_redis

        url = require_redis()
        project = request.getfixturevalue("scope_names")[0]
        request.addfinalizer(lambda: drop_redis_project(url, project))  # only this test's keys
        return RedisHotPlane(url)
    from oqronkit.backends.postgres import PostgresHotPlane

    return PostgresHotPlane(request.getfixturevalue("pg_schema_url"))


@pytest.fixture(params=HOT_BACKENDS)
def hot_backend_name(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def hot(hot_backend_name: str, request: pytest.FixtureRequest, tmp_path) -> Iterator[object]:
    plane = make_hot(hot_backend_name, request, tmp_path)
    plane.ensure_ready()
    try:
        yield plane
    finally:
        plane.close()


@pytest.fixture
def scope(scope_names) -> Scope:
    return Scope(*scope_names)
