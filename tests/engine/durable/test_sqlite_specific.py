"""What the contract suite cannot see about the SQLite store: index use, WAL, the
schema's exact shape, and several *processes* sharing one file."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import threading
from collections.abc import Iterator

import pytest

from oqronkit import ABSENT, BackendUnavailable, DurablePlane, LegacyLayoutDetected, RecordWrite
from oqronkit.backends.sqlite import SQLiteDurableStore, list_statement
from oqronkit.backends.types import ListQuery
from oqronkit.errors import ConfigurationError

ENV = "test"


@pytest.fixture
def db_path(tmp_path) -> str:
    return str(tmp_path / "durable.sqlite3")


@pytest.fixture
def plane(db_path: str, scope_names) -> Iterator[DurablePlane]:
    project, environment = scope_names
    durable = DurablePlane(SQLiteDurableStore(db_path), project=project, environment=environment)
    durable.start()
    try:
        yield durable
    finally:
        durable.close()


def raw(path: str) -> sqlite3.Connection:
    """A plain connection, as a dashboard or the board would open the file."""
    return sqlite3.connect(path, isolation_level=None)


def plan(path: str, sql: str, params: list) -> list[str]:
    with raw(path) as conn:
        return [row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]


def seed_runs(plane: DurablePlane, count: int = 300) -> None:
    statuses = ("completed", "completed", "failed")
    plane.put_many(
        RecordWrite("runs", f"r{i:05d}", {
            "status": statuses[i % 3], "name": f"q{i % 4}", "module": "queue", "startedAt": 1_000 + i,
        })
        for i in range(count)
    )


# -- indexes -----------------------------------------------------------------------


@pytest.mark.parametrize("after", [None, (1_150, "r00150")])
def test_failed_runs_listing_seeks_the_status_index(plane: DurablePlane, db_path: str, after):
    seed_runs(plane)
    # Exactly what DurablePlane.list("runs", status="failed", order="started",
    # descending=True) hands the store (limit + 1 to know whether a next page exists).
    query = ListQuery(
        table="runs", namespace="runs", status="failed", order="started", descending=True,
        limit=51, after=after,
    )
    sql, params = list_statement(plane.scope, query)
    steps = plan(db_path, sql, params)
    assert any("USING INDEX oqron_runs_status_idx" in step for step in steps), steps
    assert not any("TEMP B-TREE" in step for step in steps), steps
    assert not any(step.startswith("SCAN") for step in steps), steps
    if after is not None:
        # The keyset cursor is an index range, not a filter over every newer row.
        assert any("<expr><?" in step for step in steps), steps


@pytest.mark.parametrize(
    "filters,index",
    [({"name": "q1"}, "oqron_runs_name_idx"), ({"module": "queue"}, "oqron_runs_module_idx"),
     ({}, "oqron_runs_started_idx")],
)
def test_other_run_listings_use_their_index(plane: DurablePlane, db_path: str, filters, index):
    seed_runs(plane)
    query = ListQuery(table="runs", namespace="runs", order="started", descending=True, limit=51, **filters)
    steps = plan(db_path, *list_statement(plane.scope, query))
    assert any(f"USING INDEX {index}" in step for step in steps), steps
    assert not any("TEMP B-TREE" in step for step in steps), steps


def test_index_assisted_listing_returns_what_the_filter_says(plane: DurablePlane):
    seed_runs(plane, 30)
    page = plane.list("runs", status="failed", order="started", descending=True, limit=4)
    assert [r.id for r in page.records] == ["r00029", "r00026", "r00023", "r00020"]
    rest = plane.list("runs", status="failed", order="started", descending=True, limit=50,
                      cursor=page.next_cursor)
    assert [r.id for r in rest.records] == [f"r{i:05d}" for i in range(17, -1, -3)]
    by_kind = plane.list(kind="run", status="failed", name="q2", order="started")
    assert [r.id for r in by_kind.records] == ["r00002", "r00014", "r00026"]


# -- the file ----------------------------------------------------------------------


def test_wal_busy_timeout_and_synchronous(plane: DurablePlane, db_path: str):
    with raw(db_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn = plane.store._connection()  # the store's own connection for this thread
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 10_000
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def test_schema_has_the_spec_shape(plane: DurablePlane, db_path: str):
    plane.store.ensure_schema()  # idempotent
    with raw(db_path) as conn:
        for table in ("oqron_records", "oqron_jobs", "oqron_runs"):
            info = conn.execute(f"PRAGMA table_info({table})").fetchall()  # our fixed names
            columns = {row[1]: (row[2], row[3], row[5]) for row in info}
            assert columns == {
                "project": ("TEXT", 1, 1), "environment": ("TEXT", 1, 2), "namespace": ("TEXT", 1, 3),
                "record_kind": ("TEXT", 1, 0), "id": ("TEXT", 1, 4), "value": ("TEXT", 1, 0),
                "inserted_at": ("INTEGER", 1, 0), "expires_at": ("INTEGER", 0, 0),
            }
        indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    expected = {f"oqron_{t}_{i}_idx" for t in ("records", "jobs", "runs") for i in ("kind", "expires")}
    expected |= {f"oqron_runs_{f}_idx" for f in ("status", "name", "module", "started")}
    assert expected <= indexes


def test_plain_sql_reads_what_the_engine_wrote(plane: DurablePlane, db_path: str):
    plane.put("queue_dlq:emails", "d1", {"error": "boom"})
    plane.put("runs", "r1", {"status": "failed", "startedAt": 5})
    with raw(db_path) as conn:
        dlq = conn.execute(
            "SELECT namespace, count(*) FROM oqron_jobs WHERE project = ? AND environment = ? "
            "AND record_kind = 'dlq' GROUP BY namespace", (plane.scope.project, plane.scope.environment),
        ).fetchall()
        failed = conn.execute(
            "SELECT id FROM oqron_runs WHERE project = ? AND value ->> '$.status' = 'failed'",
            (plane.scope.project,),
        ).fetchall()
    assert dlq == [("queue_dlq:emails", 1)]
    assert failed == [("r1",)]


def test_missing_directory_is_a_clear_error(tmp_path, scope_names):
    path = str(tmp_path / "no-such-dir" / "durable.sqlite3")
    durable = DurablePlane(SQLiteDurableStore(path), project=scope_names[0], environment=ENV)
    with pytest.raises(BackendUnavailable, match="no-such-dir"):
        durable.start()
    assert not os.path.exists(os.path.dirname(path))  # we never create it


def test_a_file_that_is_not_sqlite_is_wrapped(tmp_path, scope_names):
    path = tmp_path / "durable.sqlite3"
    path.write_bytes(b"definitely not a database" * 100)
    durable = DurablePlane(SQLiteDurableStore(str(path)), project=scope_names[0], environment=ENV)
    with pytest.raises(BackendUnavailable, match=r"durable\.sqlite3") as caught:
        durable.start()
    assert isinstance(caught.value.__cause__, sqlite3.Error)


@pytest.mark.parametrize("path", ["", ":memory:"])
def test_in_memory_paths_are_refused(path):
    with pytest.raises(ConfigurationError):
        SQLiteDurableStore(path)


def test_v1_table_is_detected(db_path: str, scope_names):
    with raw(db_path) as conn:
        conn.execute("CREATE TABLE oqron_kv (k TEXT PRIMARY KEY, v TEXT)")
    durable = DurablePlane(SQLiteDurableStore(db_path), project=scope_names[0], environment=ENV)
    with pytest.raises(LegacyLayoutDetected):
        durable.start()
    durable.close()


# -- connections -------------------------------------------------------------------


def test_close_closes_every_thread_connection(plane: DurablePlane):
    store = plane.store
    opened: list[sqlite3.Connection] = []

    def use() -> None:
        plane.get("runs", "x")
        opened.append(store._connection())

    threads = [threading.Thread(target=use) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    plane.close()
    for conn in opened:
        with pytest.raises(sqlite3.ProgrammingError):
            conn.execute("SELECT 1")
    with pytest.raises(BackendUnavailable, match="closed"):
        plane.get("runs", "x")


def test_connections_of_finished_threads_are_reclaimed(plane: DurablePlane):
    store = plane.store
    for _ in range(5):
        t = threading.Thread(target=plane.get, args=("runs", "x"))
        t.start()
        t.join()
    plane.get("runs", "x")
    assert len(store._connections) <= 2


def test_a_forked_child_opens_its_own_connection(plane: DurablePlane):
    store = plane.store
    parent_conn = store._connection()
    store._pid = -1  # what a fork looks like from the store's side
    assert store._connection() is not parent_conn
    plane.put("runs", "after-fork", {"status": "ok"})
    assert plane.get("runs", "after-fork") is not None


def test_a_failed_write_leaves_no_transaction_open(plane: DurablePlane):
    with pytest.raises(AttributeError):  # a bug mid-transaction, not a driver error
        plane.store.put_many(plane.scope, [None])  # type: ignore[list-item]
    conn = plane.store._connection()
    assert not conn.in_transaction
    plane.put("runs", "ok", {"status": "ok"})


# -- several processes -------------------------------------------------------------


def _race_insert(path: str, project: str, barrier, ids: list[str], results) -> None:
    durable = DurablePlane(SQLiteDurableStore(path), project=project, environment=ENV)
    try:
        barrier.wait(timeout=60)
        results.put([durable.insert("queue_job:q", id, {"by": os.getpid()}) for id in ids])
    finally:
        durable.close()


def _increment_with_cas(path: str, project: str, barrier, times: int, results) -> None:
    durable = DurablePlane(SQLiteDurableStore(path), project=project, environment=ENV)
    try:
        barrier.wait(timeout=60)
        attempts = 0
        for _ in range(times):
            while True:
                attempts += 1
                current = durable.get("cron_durable", "counter").value["n"]
                if durable.compare_and_set("cron_durable", "counter", expect={"n": current},
                                           value={"n": current + 1}):
                    break
        results.put(attempts)
    finally:
        durable.close()


def run_processes(target, count: int, *args) -> list:
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(count), ctx.Queue()
    procs = [ctx.Process(target=target, args=(*args[:2], barrier, *args[2:], results)) for _ in range(count)]
    for p in procs:
        p.start()
    try:
        return [results.get(timeout=120) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=30)
        assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]


@pytest.mark.slow
def test_two_processes_racing_inserts_have_exactly_one_winner_each(plane: DurablePlane, db_path: str):
    ids = [f"job-{i}" for i in range(40)]
    won_a, won_b = run_processes(_race_insert, 2, db_path, plane.scope.project, ids)
    assert all(a != b for a, b in zip(won_a, won_b, strict=True))  # exactly one winner per id
    assert plane.count("queue_job:q") == len(ids)


@pytest.mark.slow
def test_processes_compare_and_set_never_lose_an_update(plane: DurablePlane, db_path: str):
    assert plane.compare_and_set("cron_durable", "counter", expect=ABSENT, value={"n": 0})
    run_processes(_increment_with_cas, 3, db_path, plane.scope.project, 25)
    assert plane.get("cron_durable", "counter").value == {"n": 75}


def test_scope_is_a_real_column(plane: DurablePlane, db_path: str):
    other = plane.scoped(project=plane.scope.project, environment="production")
    plane.put("runs", "same", {"status": "a"})
    other.put("runs", "same", {"status": "b"})
    with raw(db_path) as conn:
        rows = conn.execute(
            "SELECT environment FROM oqron_runs WHERE project = ? AND id = 'same' ORDER BY environment",
            (plane.scope.project,),
        ).fetchall()
    assert rows == [("production",), (plane.scope.environment,)]
