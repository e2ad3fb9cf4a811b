"""The plane drift drill (issue 37, item 3): under load, the hot plane loses every entry
(a FLUSHALL of the test's own Redis; on the postgres and sqlite modes, the scope's rows
of the hot tables), the Plane drift page and /api/v1/planes/ show the drift, an operator
runs the reconciler from the board, the page is clean again, and every job runs and
completes exactly once. The leader's own reconciler is held off, so the board's repairs."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest
from django.db import connections
from django.urls import reverse

from oqronkit import Engine, Registry
from oqronkit.contrib.django import engine as django_engine
from oqronkit.namespaces import RUNS, job_namespace
from oqronkit.worker import WorkerProcess
from tests.board.seed import Board
from tests.dedicated import DedicatedRedis, dedicated_redis

JOBS_BEFORE, JOBS_AFTER = 300, 100
HOT_TABLES = {"postgres": ("oqron_hot_jobs", "oqron_hot_kv", "oqron_hot_locks"),
              "default": ("oqron_hot_jobs", "oqron_hot_leases", "oqron_hot_kv", "oqron_hot_locks")}


@pytest.fixture(params=["own-hot-tables", "redis"])
def hot(request: pytest.FixtureRequest, board: Board, settings) -> Iterator[DedicatedRedis | None]:
    """The hot plane under test: the mode's own tables, or a private Redis beside Postgres."""
    if request.param == "own-hot-tables":
        yield None
        return
    if board.db.alias == "default":
        pytest.skip("there is no redis-sqlite mode: Redis runs beside Postgres only")
    with dedicated_redis() as server:
        settings.OQRON = {**settings.OQRON, "MODE": "redis-postgres", "REDIS_URL": server.url}
        try:
            yield server
        finally:
            django_engine.reset()


def flush_hot_plane(board: Board, redis: DedicatedRedis | None) -> None:
    """Lose every hot entry of the scope: a Redis FLUSHALL (our own server only), or a
    delete of the scope's rows of the hot tables."""
    if redis is not None:
        redis.flushall()
        return
    with connections[board.db.alias].cursor() as cursor:
        for table in HOT_TABLES[board.db.alias]:
            cursor.execute(f"DELETE FROM {table} WHERE project = %s AND environment = %s",
                           [board.db.project, board.db.environment])


def planes(board: Board) -> dict:
    return json.loads(board.viewer.get(reverse("oqronboard:api-planes")).content)


def wait_for(predicate, timeout: float, what: str, board: Board | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := predicate():
            return found
        time.sleep(0.2)
    last = planes(board) if board is not None else None
    raise AssertionError(f"not within {timeout} s: {what}; the planes last: {last}")


def test_flush_the_hot_plane_under_load_then_reconcile_from_the_board(board: Board, hot: DedicatedRedis | None):
    runs: Counter[str] = Counter()
    lock = threading.Lock()

    def handler(ctx):
        time.sleep(0.01)
        with lock:
            runs[ctx.job_id] += 1
        return {"i": ctx.data["i"]}

    worker_engine = Engine(django_engine.get_config(), registry=Registry())
    # A 10 s lease: renewed every 3.3 s, so a renewal late under this machine's load is
    # not "lapsing" (within a heartbeat of its expiry) as a 3 s lease's would be.
    queue = worker_engine.queue("drill", handler=handler, lease=10, concurrency=2)
    process = WorkerProcess(worker_engine, poll_interval=0.1)
    thread = threading.Thread(target=process.run, daemon=True)
    thread.start()
    services = wait_for(lambda: process.services, 10, "the worker's services start")
    services.intervals["reconcile"] = 3600.0  # the board's reconciler repairs, not the leader's
    added: list[str] = []
    try:
        added += [queue.add({"i": i}).id for i in range(JOBS_BEFORE)]
        added += [queue.add({"i": i}, delay=1).id for i in range(JOBS_BEFORE, JOBS_BEFORE + 20)]
        flush_hot_plane(board, hot)
        for i in range(JOBS_AFTER):  # the load goes on: new jobs are signalled as ever
            added.append(queue.add({"i": 1000 + i}).id)
            time.sleep(0.01)

        def lost_jobs_show() -> dict | None:
            rows = [q for q in planes(board)["queues"] if q["queue"] == "drill"]
            return rows[0] if rows and rows[0]["unsignalled"]["count"] else None

        row = wait_for(lost_jobs_show, 15, "the lost jobs show", board)  # past the 2 s grace
        page = board.viewer.get(reverse("oqronboard:planes")).content.decode()
        assert 'data-testid="planes-drift"' in page
        lost_before = row["unsignalled"]["count"]

        response = board.operator.post(reverse("oqronboard:planes-reconcile"), HTTP_HX_REQUEST="true")
        assert response.status_code == 200 and "Reconciler started" in response.content.decode()
        clean = wait_for(lambda: (d := planes(board)) and d["clean"] and not d["reconcile_running"] and d, 30,
                         "the planes agree again", board)
        repair = clean["repairs"][0]
        assert repair["manual"] and repair["repaired"].get("signalled", 0) >= lost_before
        page_url = reverse("oqronboard:planes")
        wait_for(lambda: 'data-testid="planes-clean"' in board.viewer.get(page_url).content.decode(), 10,
                 "the page says clean", board)

        def all_ran() -> bool:
            with lock:
                return len(runs) == len(added)

        wait_for(all_ran, 60, "every job ran")
    finally:
        process.request_stop()
        thread.join(timeout=30)
        worker_engine.close()
    assert not thread.is_alive()
    assert set(runs) == set(added) and set(runs.values()) == {1}, "a job ran twice or never"
    durable = board.scope.engine.durable
    assert list(durable.scan_statuses(job_namespace("drill"), ("waiting", "delayed", "active"))) == []
    completed = [r for r in durable.list(RUNS, name="drill", status="completed", limit=1000).records]
    assert Counter(r.value["jobId"] for r in completed) == Counter({job_id: 1 for job_id in added})
