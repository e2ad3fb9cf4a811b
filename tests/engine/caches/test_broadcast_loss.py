"""A dropped Redis pub/sub or Postgres LISTEN connection may have lost invalidations:
every handler hears None, every L1 listening on it is emptied and bypassed until the
subscription is confirmed again."""

from __future__ import annotations

import time

import pytest

from oqronkit.backends.redis import RedisHotPlane
from oqronkit.backends.types import Scope
from tests.services import drop_redis_project, require_redis


def wait(predicate, timeout=5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.01)


@pytest.fixture
def plane(scope_names):
    url = require_redis()
    hot = RedisHotPlane(url)
    hot.ensure_ready()
    yield hot
    hot.close()
    drop_redis_project(url, scope_names[0])


def test_a_dropped_connection_reports_a_possible_loss_then_resubscribes(plane, scope_names):
    scope = Scope(*scope_names)
    got: list[str | None] = []
    sub = plane.listen(scope, "c", got.append)
    assert sub.ready.wait(5)
    plane.broadcast(scope, "c", "before")
    wait(lambda: got == ["before"])
    listener = plane._listener
    assert listener is not None and listener._pubsub is not None
    listener._pubsub.connection.disconnect()  # the network drops the subscriber's connection
    wait(lambda: None in got)
    assert sub.ready.wait(5)  # subscribed again
    plane.broadcast(scope, "c", "after")
    wait(lambda: got[-1] == "after")
    sub.close()
    plane.broadcast(scope, "c", "closed")
    time.sleep(0.1)
    assert got[-1] == "after"


@pytest.mark.parametrize("mode", ["redis", "redis-postgres"])
def test_an_l1_is_emptied_after_a_possible_loss(engine, mode):
    c = engine.cache("lossy", ttl=60, local=10)
    c.set("k", 1)
    assert c.get("k") == 1
    engine.hot.kv_delete(c.group, ["k"])
    assert c.get("k") == 1  # from the L1
    listener = engine.hot.plane._listener
    listener._pubsub.connection.disconnect()
    wait(lambda: c.get("k") is None)  # emptied: the read went to Redis, where k is gone
    wait(lambda: c.local.usable)
    c.set("k", 2)
    assert c.get("k") == 2


def test_postgres_a_terminated_listener_reports_a_possible_loss_then_listens_again(pg_schema_url, scope_names):
    import os

    import psycopg

    from oqronkit.backends.postgres import PostgresHotPlane

    plane = PostgresHotPlane(pg_schema_url)
    plane.ensure_ready()
    scope = Scope(*scope_names)
    got: list[str | None] = []
    try:
        sub = plane.listen(scope, "c", got.append)
        assert sub.ready.wait(5)
        plane.broadcast(scope, "c", "before")
        wait(lambda: got == ["before"])
        with psycopg.connect(pg_schema_url, autocommit=True) as admin:
            killed = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                   "WHERE application_name = %s", [f"oqronkit-broadcast-{os.getpid()}"]).fetchall()
        assert killed == [(True,)]
        wait(lambda: None in got)
        assert sub.ready.wait(5)
        plane.broadcast(scope, "c", "after")
        wait(lambda: got[-1] == "after")
    finally:
        plane.close()
