"""One fixture parametrised over every hot-plane backend: the contract suite in this
folder runs unchanged against each of them. Also the two-process claim race that the
networked planes' own test files run."""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from oqronkit.backends.hot_types import Signal
from oqronkit.backends.memory_hot import MemoryHotPlane
from oqronkit.backends.types import Scope
from oqronkit.errors import BackendUnavailable

# "sqlite-3.12.1": SQLite through the connection class Python 3.12.0/3.12.1 get
# (backends/sqlite_compat.py), so its parameter binding passes the contract on any version.
# "redis-cluster": the Redis plane on a local 3-master cluster (tests/redis_cluster.py).
HOT_BACKENDS = ["memory", "sqlite", "sqlite-3.12.1", "postgres", "redis", "redis-cluster"]
NOW = 1_700_000_000_000
LEASE = 30_000

# Spawned, not forked: the parent holds pool and listener threads, and forking a
# threaded process is unsafe (and a DeprecationWarning, which this suite turns into an error).
SPAWN = multiprocessing.get_context("spawn")


def make_hot(name: str, request: pytest.FixtureRequest, tmp_path):
    if name == "memory":
        return MemoryHotPlane()
    if name == "sqlite-3.12.1":
        from oqronkit.backends import sqlite_conn
        from oqronkit.backends.sqlite_compat import connection_factory

        request.getfixturevalue("monkeypatch").setattr(sqlite_conn, "connection_factory",
                                                       lambda: connection_factory((3, 12, 1)))
        name = "sqlite"
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
    if name == "redis-cluster":
        from oqronkit.backends.redis import RedisHotPlane
        from tests.redis_cluster import drop_cluster_project

        cluster = request.getfixturevalue("redis_cluster")
        project = request.getfixturevalue("scope_names")[0]
        request.addfinalizer(lambda: drop_cluster_project(cluster, project))
        return RedisHotPlane(cluster.url)
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


# -- helpers for the networked planes' own test files ---------------------------------


def assert_close_interrupts_a_wait(plane: Any, scope: Scope) -> None:
    """close() from another thread ends a long wait() at once, with BackendUnavailable."""
    plane.ensure_ready()
    outcome: list[object] = []

    def waiter() -> None:
        try:
            outcome.append(plane.wait(scope, ["idle"], 30.0))
        except BackendUnavailable as exc:
            outcome.append(exc)

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.2)
    started = time.monotonic()
    plane.close()
    thread.join(5)
    assert time.monotonic() - started < 2.0 and isinstance(outcome[0], BackendUnavailable)


# -- two processes claiming at once --------------------------------------------------


def _claim_all(open_plane: Callable[[str], Any], url: str, names: tuple[str, str], worker: str, start, out) -> None:
    """Child process: claim (and ack) batches until the queue is empty."""
    hot = open_plane(url)
    scope = Scope(*names)
    hot.ensure_ready()
    hot.depths(scope, "q", NOW)  # connected and warm before the race starts
    start.wait(60)  # a barrier: both children start claiming together
    mine: list[str] = []
    try:
        while batch := hot.claim(scope, "q", worker_id=worker, limit=7, lease_ms=LEASE, now=NOW):
            mine.extend(lease.job_id for lease in batch)
            hot.ack(scope, "q", batch)
    finally:
        hot.close()
        out.put(mine)


def assert_two_processes_never_share_a_job(
    hot: Any, open_plane: Callable[[str], Any], url: str, scope_names: tuple[str, str], jobs: int = 500
) -> None:
    """Signal ``jobs`` jobs on ``hot``, let two spawned processes (each with its own
    ``open_plane(url)``, so ``open_plane`` must be picklable, e.g. the plane's class)
    claim and ack them all at once, and check each job went to exactly one of them."""
    scope = Scope(*scope_names)
    hot.signal(scope, "q", [Signal(f"j{i}") for i in range(jobs)], NOW)
    start, out = SPAWN.Barrier(2), SPAWN.Queue()
    children = [
        SPAWN.Process(target=_claim_all, args=(open_plane, url, scope_names, f"w{n}", start, out))
        for n in range(2)
    ]
    for child in children:
        child.start()
    got = [out.get(timeout=60) for _ in children]
    for child in children:
        child.join(30)
        assert child.exitcode == 0
    everything = [job_id for mine in got for job_id in mine]
    assert len(everything) == jobs and set(everything) == {f"j{i}" for i in range(jobs)}
    assert all(got), "both processes should have claimed some jobs"
    assert hot.depths(scope, "q", NOW).active == 0
