"""Engines on every mode that has both planes, and a helper to run a worker until a
condition holds."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from oqronkit import Engine, OqronConfig, Registry
from oqronkit.worker import WorkerProcess

# "redis-cluster-postgres": mode redis-postgres with the hot plane on a local Redis
# Cluster (tests/redis_cluster.py); it runs the modules of CLUSTER_SLICE only (the other
# suites that share MODES or this `mode` fixture drop it: tests/conftest.py).
MODES = ["memory", "sqlite", "postgres", "redis-postgres", "redis", "redis-cluster-postgres"]
CLUSTER_SLICE = frozenset({
    "test_add", "test_control", "test_lifecycle", "test_prefetch", "test_processing", "test_queue_limits",
    "test_reconciler", "test_rescue_races", "test_settling",
})
#: Modules elsewhere that run the cluster mode too (full module names).
CLUSTER_ALSO = frozenset({"tests.engine.topics.test_wake"})


def make_config(mode: str, request: pytest.FixtureRequest, tmp_path, project: str) -> OqronConfig:
    if mode == "memory":
        return OqronConfig(mode="memory", database_url=None, project=project)
    if mode == "sqlite":
        return OqronConfig(mode="sqlite", database_url=f"sqlite:///{tmp_path / 'oqron.sqlite3'}", project=project)
    from tests.services import require_redis

    if mode == "redis":
        return OqronConfig(mode="redis", database_url=None, redis_url=require_redis(), project=project)
    pg_url = request.getfixturevalue("pg_schema_url")
    if mode == "redis-cluster-postgres":
        cluster_url = request.getfixturevalue("redis_cluster").url
        return OqronConfig(mode="redis-postgres", database_url=pg_url, redis_url=cluster_url, project=project)
    if mode == "redis-postgres":
        return OqronConfig(mode="redis-postgres", database_url=pg_url, redis_url=require_redis(), project=project)
    return OqronConfig(mode="postgres", database_url=pg_url, project=project)


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


@contextlib.contextmanager
def built_engine(mode: str, request: pytest.FixtureRequest, tmp_path, project: str, **settings) -> Iterator[Engine]:
    """An engine on ``mode`` (``settings`` override its config), closed and its Redis
    keys dropped afterwards."""
    config = dataclasses.replace(make_config(mode, request, tmp_path, project), **settings)
    eng = Engine(config, registry=Registry())
    try:
        yield eng
    finally:
        eng.close()
        if mode == "redis-cluster-postgres":
            from tests.redis_cluster import drop_cluster_project

            drop_cluster_project(request.getfixturevalue("redis_cluster"), project)
        elif mode.startswith("redis"):
            from tests.services import drop_redis_project

            drop_redis_project(eng.config.redis_url or "", project)


@pytest.fixture
def engine(mode: str, request: pytest.FixtureRequest, tmp_path, scope_names) -> Iterator[Engine]:
    with built_engine(mode, request, tmp_path, scope_names[0]) as eng:
        yield eng


def wait_until(predicate: Callable[[], object], timeout: float = 10.0, interval: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout} s: {getattr(predicate, '__doc__', '')}")


@contextlib.contextmanager
def running(engine: Engine, **options) -> Iterator[WorkerProcess]:
    """A worker process (threads in this process) running until the block ends."""
    options.setdefault("poll_interval", 0.2)
    process = WorkerProcess(engine, **options)
    thread = threading.Thread(target=process.run, daemon=True)
    thread.start()
    try:
        yield process
    finally:
        process.request_stop()
        thread.join(timeout=30)
        assert not thread.is_alive(), "worker did not stop"


def fast_services(process: WorkerProcess) -> None:
    """Shorten the leader's intervals so rescue/reconcile tests run in seconds."""
    if process.services is not None:
        process.services.intervals.update(rescue=0.2, reconcile=0.5, sweep=0.3)
