"""What the contract suite cannot see about the Postgres store: the spec's own SQL
against our tables, index use at scale, concurrent schema creation, failure modes,
and list semantics checked row for row against the memory backend."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from oqronkit import ABSENT, BackendUnavailable, DurablePlane, InvalidRecord, RecordWrite
from oqronkit.backends.memory import MemoryDurableStore
from oqronkit.backends.postgres import PostgresDurableStore
from oqronkit.backends.postgres.statements import composed, list_plan
from oqronkit.backends.types import ListQuery, Scope

# The five dashboard queries of the storage model (docs/explanation/storage-model.md), verbatim.
# Only the literal project and run id are substituted per test (see `spec_sql`).
SPEC_FAILED_RUNS = """\
SELECT value FROM oqron_runs
WHERE project = 'my-app' AND environment = 'production'
  AND value->>'status' = 'failed'
ORDER BY (value->>'startedAt')::numeric DESC
LIMIT 50;"""
SPEC_DLQ_DEPTH = """\
SELECT namespace, count(*) FROM oqron_jobs
WHERE project = 'my-app' AND environment = 'production'
  AND record_kind = 'dlq'
GROUP BY namespace;"""
SPEC_DEFINITIONS = """\
SELECT namespace, id, value FROM oqron_records
WHERE project = 'my-app' AND environment = 'production'
  AND record_kind = 'definition';"""
SPEC_ONE_RUN = """\
SELECT value FROM oqron_runs
WHERE project = 'my-app' AND environment = 'production'
  AND id = '<run-id>';"""
SPEC_TOPIC_LOG = """\
SELECT value FROM oqron_runs
WHERE project = 'my-app' AND environment = 'production'
  AND record_kind = 'message' AND namespace = 'topic_msg:order-events'
ORDER BY (value->>'publishedAt')::numeric DESC
LIMIT 50;"""

OUR_INDEXES = {
    "oqron_runs_other_status_started_idx", "oqron_runs_other_status_started_f8_idx",
    "oqron_runs_run_name_started_f8_idx", "oqron_runs_other_module_started_f8_idx", "oqron_runs_run_started_f8_idx",
    "oqron_runs_message_published_idx",
}


def spec_sql(query: str, project: str, run_id: str | None = None) -> str:
    """The spec's text with its sample project / run id replaced by this test's (both are
    generated names of letters, digits and dashes, so no quoting is involved)."""
    for name in (project, run_id or ""):
        assert name.replace("-", "").isalnum() or not name
    text = query.replace("'my-app'", f"'{project}'")
    return text if run_id is None else text.replace("'<run-id>'", f"'{run_id}'")


def fetch(url: str, sql: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchall()


@pytest.fixture
def production(pg_schema_url: str, scope_names) -> Iterator[DurablePlane]:
    project, _ = scope_names
    plane = DurablePlane(PostgresDurableStore(pg_schema_url), project=project, environment="production")
    plane.start()
    try:
        yield plane
    finally:
        plane.close()


def run(i: int, status: str = "completed") -> dict[str, Any]:
    """A run record with every field of the spec's run record."""
    ts = 1_751_587_200_000 + i * 1000
    return {
        "id": f"run-{i}", "name": "emails", "module": "queue", "status": status, "trigger": "queue",
        "input": {"to": f"u{i}@x.com"}, "output": None, "attempts": 1, "progressPercent": 100,
        "logs": [{"level": "info", "msg": f"log {i}", "ts": ts + 1}],
        "timeline": [{"ts": ts, "from": "waiting", "to": "running", "reason": "claimed"}], "error": None,
        "app": "my-app", "environment": "production", "workerId": "node-1",
        "startedAt": ts, "endedAt": ts + 500, "durationMs": 500,
    }


# -- the spec's dashboard queries ----------------------------------------------------------


def test_spec_example_queries_run_unchanged(production: DurablePlane, pg_schema_url: str):
    project = production.scope.project
    runs = [run(i, "failed" if i % 3 == 0 else "completed") for i in range(12)]
    production.put_many(RecordWrite("runs", r["id"], r) for r in runs)
    production.put_many([
        RecordWrite("queue_dlq:emails", "d1", {"status": "dead"}),
        RecordWrite("queue_dlq:emails", "d2", {"status": "dead"}),
        RecordWrite("queue_dlq:reports", "d3", {"status": "dead"}),
        RecordWrite("queue_job:emails", "j1", {"status": "waiting"}),
        RecordWrite("cron", "nightly", {"expr": "0 3 * * *"}),
        RecordWrite("webhook_endpoints:billing", "e1", {"url": "https://x"}),
        RecordWrite("queue", "emails", {"paused": False}),
        RecordWrite("topic_msg:order-events", "m1", {"publishedAt": 10, "payload": {"n": 1}}),
        RecordWrite("topic_msg:order-events", "m2", {"publishedAt": 30, "payload": {"n": 2}}),
        RecordWrite("topic_msg:order-events", "m3", {"publishedAt": 20, "payload": {"n": 3}}),
        RecordWrite("topic_msg:other", "m9", {"publishedAt": 99}),
    ])
    # The same shapes in another environment must never show up.
    staging = production.scoped(project=project, environment="staging")
    staging.put_many([
        RecordWrite("runs", "run-0", run(0, "failed")), RecordWrite("queue_dlq:emails", "x", {}),
        RecordWrite("cron", "other", {}), RecordWrite("topic_msg:order-events", "s", {"publishedAt": 1}),
    ])

    failed = [r for r in runs if r["status"] == "failed"]
    assert [row[0] for row in fetch(pg_schema_url, spec_sql(SPEC_FAILED_RUNS, project))] == sorted(
        failed, key=lambda r: r["startedAt"], reverse=True)
    assert dict(fetch(pg_schema_url, spec_sql(SPEC_DLQ_DEPTH, project))) == {
        "queue_dlq:emails": 2, "queue_dlq:reports": 1}
    assert sorted(fetch(pg_schema_url, spec_sql(SPEC_DEFINITIONS, project))) == [
        ("cron", "nightly", {"expr": "0 3 * * *"}),
        ("webhook_endpoints:billing", "e1", {"url": "https://x"}),
    ]
    assert fetch(pg_schema_url, spec_sql(SPEC_ONE_RUN, project, "run-7")) == [(runs[7],)]
    assert [row[0]["payload"]["n"] for row in fetch(pg_schema_url, spec_sql(SPEC_TOPIC_LOG, project))] == [2, 3, 1]


def plan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


def explain(conn: Any, sql: Any, params: Any = None) -> dict[str, Any]:
    if isinstance(sql, bytes):  # the store's statements come rendered
        sql = sql.decode()
    prefix = psycopg.sql.SQL("EXPLAIN (FORMAT JSON) ")
    statement = prefix + (sql if isinstance(sql, psycopg.sql.Composable) else psycopg.sql.SQL(sql))
    return conn.execute(statement, params).fetchone()[0][0]["Plan"]


def assert_index_served(plan: dict[str, Any]) -> None:
    """One of our indexes is scanned and it delivers the order: no Sort node at all
    (stricter than "no Sort over a Seq Scan")."""
    nodes = list(plan_nodes(plan))
    used = {n.get("Index Name") for n in nodes if "Index" in n["Node Type"]}
    assert used & OUR_INDEXES, f"no index of ours in the plan: {plan}"
    assert not {"Seq Scan", "Sort", "Incremental Sort"} & {n["Node Type"] for n in nodes}, plan


@pytest.mark.slow
def test_failed_runs_query_is_served_by_an_index_at_scale(fresh_schema_url: str, scope_names):
    project, _ = scope_names
    plane = DurablePlane(PostgresDurableStore(fresh_schema_url), project=project, environment="production")
    plane.start()
    try:
        # Other projects share the table, as they would in production.
        other = plane.scoped(project=f"{project}-other", environment="production")
        statuses = ["completed"] * 8 + ["failed", "running"]
        for target, total in ((plane, 200_000), (other, 20_000)):
            for start in range(0, total, 10_000):
                target.put_many(
                    RecordWrite("runs", f"r{i:07d}", {
                        "id": f"r{i:07d}", "name": f"q{i % 7}", "module": ("queue", "cron")[i % 2],
                        "status": statuses[(i * 7) % 10], "startedAt": 1_700_000_000_000 + i * 10,
                    })
                    for i in range(start, start + 10_000)
                )
        topics = ["topic_msg:order-events", "topic_msg:a", "topic_msg:b", "topic_msg:c"]
        plane.put_many(RecordWrite(topics[i % 4], f"m{i}", {"publishedAt": i}) for i in range(8_000))
        with psycopg.connect(fresh_schema_url, autocommit=True) as conn:
            conn.execute("ANALYZE oqron_runs")
            assert_index_served(explain(conn, spec_sql(SPEC_FAILED_RUNS, project)))
            assert_index_served(explain(conn, spec_sql(SPEC_TOPIC_LOG, project)))
            # The store's own list query: a status filter, newest first, past a cursor.
            query = ListQuery(table="runs", namespace="runs", status="failed", order="started",
                              descending=True, limit=51, after=(1_700_000_500_000, "r0050000"))
            parts, params = list_plan(Scope(project, "production"), query)
            assert_index_served(explain(conn, composed("runs", parts), params))
            window = ListQuery(table="runs", namespace="runs", order="started", limit=51,
                               started_from=1_700_000_100_000, started_to=1_700_000_200_000)
            parts, params = list_plan(Scope(project, "production"), window)
            assert_index_served(explain(conn, composed("runs", parts), params))
            # The planner's own choice (sequential scans allowed): the dominant values
            # the partial status / module indexes leave out walk the startedAt index
            # newest first.
            for field, value in (("status", "completed"), ("module", "queue"), ("status", "failed"),
                                 ("module", "cron")):
                query = ListQuery(table="runs", namespace="runs", order="started", descending=True, limit=51,
                                  started_from=1_700_000_000_000, **{field: value})
                parts, params = list_plan(Scope(project, "production"), query)
                plan = explain(conn, composed("runs", parts), params)
                assert_index_served(plan)
                used = {n.get("Index Name") for n in plan_nodes(plan)}
                expected = ("oqron_runs_run_started_f8_idx" if value in ("completed", "queue")
                            else f"oqron_runs_other_{field}_started_f8_idx")
                assert expected in used, (field, value, plan)
        page = plane.list("runs", status="failed", order="started", descending=True, limit=50)
        assert len(page.records) == 50 and all(r.value["status"] == "failed" for r in page.records)
    finally:
        plane.close()


# -- schema, connections, errors ------------------------------------------------------------


def test_ensure_schema_drops_retired_indexes_of_an_older_schema(fresh_schema_url: str):
    store = PostgresDurableStore(fresh_schema_url)
    try:
        store.ensure_schema()
        with psycopg.connect(fresh_schema_url, autocommit=True) as conn:
            # What an earlier release created (every object of today's schema exists too).
            conn.execute("CREATE INDEX oqron_jobs_status_idx ON oqron_jobs (project, environment, namespace, "
                         "(value->>'status'))")
            conn.execute("CREATE INDEX oqron_jobs_kind_idx ON oqron_jobs "
                         "(project, environment, record_kind, namespace)")
            # The full run indexes that the partial oqron_runs_other_* ones replaced.
            conn.execute("CREATE INDEX oqron_runs_kind_idx ON oqron_runs "
                         "(project, environment, record_kind, namespace)")
            for field in ("status", "module"):
                conn.execute(f"CREATE INDEX oqron_runs_{field}_started_idx ON oqron_runs "
                             f"(project, environment, (value->>'{field}'), ((value->>'startedAt')::numeric))")
            conn.execute("DROP STATISTICS oqron_runs_status_module_stats")
            # The messages' kind index, which the message indexes made redundant.
            conn.execute("CREATE INDEX oqron_runs_other_kind_idx ON oqron_runs "
                         "(project, environment, record_kind, namespace) WHERE record_kind <> 'run'")
            # The B-tree on jobId that the hash index replaced.
            conn.execute("DROP INDEX oqron_runs_job_idx")
            conn.execute("CREATE INDEX oqron_runs_job_started_idx ON oqron_runs (project, environment, "
                         "(value->>'jobId'), ((value->>'startedAt')::numeric), id COLLATE \"C\")")
            # The numeric-keyed run indexes that the float8 ones replaced.
            for name, key in (("name", "(value->>'name')"), ("other_module", "(value->>'module')"),
                              ("namespace", "namespace"), ("worker", "(value->>'workerId')")):
                conn.execute(f"CREATE INDEX oqron_runs_{name}_started_idx ON oqron_runs (project, environment, "
                             f"{key}, ((value->>'startedAt')::numeric), id COLLATE \"C\")")
        store.ensure_schema()
        with psycopg.connect(fresh_schema_url, autocommit=True) as conn:
            names = {r[0] for r in conn.execute(
                "SELECT indexname FROM pg_indexes WHERE tablename IN ('oqron_jobs', 'oqron_runs') "
                "AND schemaname = current_schema()")}
            statistics = {r[0] for r in conn.execute(
                "SELECT stxname FROM pg_statistic_ext WHERE stxnamespace = current_schema()::regnamespace")}
        assert not {"oqron_jobs_status_idx", "oqron_jobs_kind_idx", "oqron_runs_kind_idx",
                    "oqron_runs_status_started_idx", "oqron_runs_module_started_idx",
                    "oqron_runs_job_started_idx", "oqron_runs_name_started_idx",
                    "oqron_runs_other_module_started_idx", "oqron_runs_namespace_started_idx",
                    "oqron_runs_worker_started_idx", "oqron_runs_name_started_f8_idx",
                    "oqron_runs_namespace_started_f8_idx", "oqron_runs_worker_started_f8_idx",
                    "oqron_runs_other_kind_idx"} & names
        assert {"oqron_jobs_dead_kind_idx", "oqron_jobs_status_created_idx",
                "oqron_runs_other_status_started_idx", "oqron_runs_other_status_started_f8_idx",
                "oqron_runs_other_module_started_f8_idx", "oqron_runs_run_name_started_f8_idx",
                "oqron_runs_run_started_f8_idx", "oqron_runs_run_worker_started_f8_idx",
                "oqron_runs_job_idx"} <= names
        assert statistics == {"oqron_runs_status_module_stats", "oqron_runs_started_stats"}
    finally:
        store.close()


def test_key_columns_compare_bytewise_whatever_the_database_collation(fresh_schema_url: str):
    # COLLATE "C" on the key columns: cheaper comparisons in every index insert, and the
    # same order as the memory and SQLite backends on any database.
    store = PostgresDurableStore(fresh_schema_url)
    try:
        store.ensure_schema()
        with psycopg.connect(fresh_schema_url, autocommit=True) as conn:
            collations = conn.execute(
                "SELECT c.relname, a.attname, co.collname FROM pg_attribute a "
                "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_collation co ON co.oid = a.attcollation "
                "WHERE c.relnamespace = current_schema()::regnamespace "
                "AND c.relname IN ('oqron_records', 'oqron_jobs', 'oqron_runs') AND a.attnum > 0").fetchall()
    finally:
        store.close()
    columns = ("project", "environment", "namespace", "record_kind", "id")
    assert sorted(collations) == sorted((t, c, "C") for t in ("oqron_records", "oqron_jobs", "oqron_runs")
                                        for c in columns)


def test_concurrent_ensure_schema_does_not_error(fresh_schema_url: str):
    stores = [PostgresDurableStore(fresh_schema_url) for _ in range(6)]
    barrier = threading.Barrier(len(stores))
    errors: list[BaseException] = []

    def create(store: PostgresDurableStore) -> None:
        try:
            store.has_table("oqron_runs")  # open the pool before the race starts
            barrier.wait()
            store.ensure_schema()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=create, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        assert all(stores[0].has_table(t) for t in ("oqron_records", "oqron_jobs", "oqron_runs"))
        stores[0].ensure_schema()  # and again, once everything exists
    finally:
        for store in stores:
            store.close()


def test_unreachable_server_is_backend_unavailable_quickly():
    store = PostgresDurableStore("postgresql://postgres:s3cret@127.0.0.1:1/test", connect_timeout=1.0)
    started = time.monotonic()
    with pytest.raises(BackendUnavailable) as caught:
        DurablePlane(store, project="p", environment="e").start()
    assert time.monotonic() - started < 10
    message = str(caught.value)
    assert "127.0.0.1:1" in message and "***" in message and "s3cret" not in message
    assert isinstance(caught.value.__cause__, psycopg.Error)
    store.close()


def test_has_table_honours_the_search_path_and_close_ends_the_store(fresh_schema_url: str):
    store = PostgresDurableStore(fresh_schema_url)
    assert store.has_table("oqron_kv") is False
    with psycopg.connect(fresh_schema_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE oqron_kv (k text)")
    assert store.has_table("oqron_kv") is True
    store.close()
    with pytest.raises(BackendUnavailable):
        store.has_table("oqron_kv")


def test_psycopg_is_imported_lazily_and_its_absence_names_the_extra():
    code = (
        "import sys, oqronkit\n"
        "print('psycopg' in sys.modules)\n"
        "sys.modules['psycopg'] = None\n"
        "try:\n"
        "    import oqronkit.backends.postgres\n"
        "except oqronkit.MissingDependency as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded, message = done.stdout.split("\n", 1)
    assert loaded == "False"
    assert 'pip install "oqronkit[postgres]"' in message


def test_values_postgres_refuses_are_invalid_records(production: DurablePlane):
    # The run indexes cast startedAt to float8, and jsonb cannot hold \u0000.
    with pytest.raises(InvalidRecord):
        production.put("runs", "r1", {"startedAt": "soon"})
    with pytest.raises(InvalidRecord):
        production.put("cron", "c1", {"text": "nul \x00 byte"})
    assert production.get("runs", "r1") is None and production.get("cron", "c1") is None


def test_a_refused_statement_mid_transaction_rolls_back_the_whole_apply(production: DurablePlane):
    # Several statements run as one (joined in a WITH) or as one pipelined transaction
    # (explicit BEGIN ... COMMIT): when the server refuses one part, the others are
    # undone too, and the pooled connection comes back clean for the next caller.
    production.put("queue_job:q", "doomed", {"status": "waiting"})
    with pytest.raises(InvalidRecord):
        production.apply(puts=[RecordWrite("queue_dlq:q", "doomed", {"status": "dead"}),
                               RecordWrite("runs", "r1", {"startedAt": "soon"})],
                         deletes=[("queue_job:q", "doomed")])
    assert production.get("queue_job:q", "doomed") is not None
    assert production.get("queue_dlq:q", "doomed") is None and production.get("runs", "r1") is None
    for _ in range(10):  # every pooled connection is usable (none left in a failed transaction)
        production.apply(puts=[RecordWrite("runs", "r2", {"startedAt": 1})], deletes=[("queue_job:q", "nothing")])
    assert production.get("runs", "r2") is not None


def test_started_listing_outside_the_runs_table_skips_non_numbers(production: DurablePlane):
    production.put_many([
        RecordWrite("queue_job:q", "a", {"startedAt": 2}),
        RecordWrite("queue_job:q", "b", {"startedAt": "soon"}),
        RecordWrite("queue_job:q", "c", {"startedAt": True}),
        RecordWrite("queue_job:q", "d", {"startedAt": 1.5}),
    ])
    assert [r.id for r in production.list("queue_job:q", order="started").records] == ["d", "a"]


def test_compare_and_set_absent_does_not_overwrite(production: DurablePlane):
    assert production.compare_and_set("cron_durable", "x", expect=ABSENT, value=None) is True
    production.put("cron_durable", "x", {"v": 1})
    assert production.compare_and_set("cron_durable", "x", expect=ABSENT, value=None) is False
    assert production.get("cron_durable", "x").value == {"v": 1}


# -- list semantics, row for row against the memory backend ---------------------------------


def test_list_matches_memory_backend(production: DurablePlane):
    rng = random.Random(7)
    memory = DurablePlane(MemoryDurableStore(), project=production.scope.project, environment="production")
    writes = []
    for i in range(300):
        value: dict[str, Any] = {
            "status": rng.choice(["failed", "completed", "running"]),
            "name": rng.choice(["a", "b"]), "module": rng.choice(["queue", "cron"]),
        }
        # Ints, floats, huge values, absent, and a numeric *string* (castable, so the
        # runs table accepts it, but memory does not list it in started order).
        started = rng.choice([
            rng.randint(0, 40), rng.randint(0, 40) + 0.5, 1e15 + rng.randint(0, 3), None, str(rng.randint(0, 40)),
        ])
        if started is not None:
            value["startedAt"] = started
        writes.append(RecordWrite("runs", f"id-{rng.randint(0, 10**6):07d}-{i}", value))
    production.put_many(writes)
    memory.put_many(writes)

    def pages(plane: DurablePlane, **kwargs: Any) -> list[list[str]]:
        out, cursor = [], None
        while True:
            page = plane.list("runs", limit=7, cursor=cursor, **kwargs)
            out.append([r.id for r in page.records])
            if page.next_cursor is None:
                return out
            cursor = page.next_cursor

    cases: list[dict[str, Any]] = [
        {"order": "started"}, {"order": "started", "descending": True},
        {"order": "started", "status": "failed", "descending": True},
        {"order": "started", "name": "a", "module": "cron"},
        {"started_from": 10, "started_to": 30, "order": "started"},
        {"started_from": 10, "descending": True}, {"status": "running"},
    ]
    for kwargs in cases:
        assert pages(production, **kwargs) == pages(memory, **kwargs), kwargs


def test_rows_hinted_new_are_plain_inserts_and_a_wrong_hint_writes_the_batch_again(
    production: DurablePlane, monkeypatch: pytest.MonkeyPatch
):
    from oqronkit.backends.postgres import store as store_module

    calls: list[list[str]] = []
    real_apply = store_module._apply

    def spy(conn: Any, scope: Any, writes: Any, doomed: Any) -> None:
        calls.append([query for query, _, _ in writes])
        real_apply(conn, scope, writes, doomed)

    monkeypatch.setattr(store_module, "_apply", spy)
    production.put("queue_job:q", "j1", {"status": "active"})
    calls.clear()  # put_many goes through the same path
    production.apply(puts=[RecordWrite("runs", "r1", {"status": "running", "startedAt": 1}, new=True)],
                     deletes=[("queue_job:q", "j1")])
    assert calls == [["insert_fresh_rows"]]
    calls.clear()
    production.put("queue_job:q", "j2", {"status": "active"})
    calls.clear()
    production.apply(puts=[RecordWrite("runs", "r1", {"status": "completed", "startedAt": 1}, new=True),
                           RecordWrite("runs", "r2", {"status": "completed", "startedAt": 2}, new=True)],
                     deletes=[("queue_job:q", "j2")])
    assert calls == [["insert_fresh_rows"], ["upsert_rows"]]  # r1 was taken: all again as upserts
    assert production.get("runs", "r1").value["status"] == "completed"
    assert production.get("runs", "r2") is not None and production.get("queue_job:q", "j2") is None


def test_a_finishers_apply_is_one_statement_unless_a_key_is_written_and_deleted(
    production: DurablePlane, monkeypatch: pytest.MonkeyPatch
):
    from oqronkit.backends.postgres import store as store_module

    joined: list[int] = []
    pipelined: list[int] = []
    real_joined, real_pipelined = store_module.joined_statement, store_module._pipelined
    monkeypatch.setattr(store_module, "joined_statement", lambda parts: joined.append(len(parts))
                        or real_joined(parts))
    monkeypatch.setattr(store_module, "_pipelined", lambda conn, parts: pipelined.append(len(parts))
                        or real_pipelined(conn, parts))
    production.put("queue_job:q", "j1", {"status": "active"})
    production.apply(puts=[RecordWrite("runs", "r1", {"status": "completed", "startedAt": 1}, new=True)],
                     deletes=[("queue_job:q", "j1")])
    assert (joined, pipelined) == ([2], [])
    production.put("queue_job:q", "j2", {"status": "active"})
    production.apply(puts=[RecordWrite("queue_job:q", "j2", {"status": "done"})], deletes=[("queue_job:q", "j2")])
    assert (joined, pipelined) == ([2], [2])
    assert production.get("runs", "r1") is not None and production.get("queue_job:q", "j2") is None


def test_retained_messages_enter_none_of_the_run_indexes(fresh_schema_url: str, scope_names):
    from oqronkit.topics.log import Draft, append

    plane = DurablePlane(PostgresDurableStore(fresh_schema_url), project=scope_names[0], environment="production")
    plane.start()
    try:
        plane.put_many([RecordWrite("runs", f"run-{i}", run(i)) for i in range(30)])
        drafts = [Draft(id=f"m{i}", key=None, payload={"i": i}, headers={}, correlation_id=None,
                        idempotency_key=None, published_at=1_751_587_200_000 + i) for i in range(200)]
        append(plane, "orders", 0, drafts)
    finally:
        plane.close()
    with psycopg.connect(fresh_schema_url, autocommit=True) as conn:
        # The rows each index holds: those its predicate (the whole table without one) admits.
        predicates = dict(conn.execute(
            "SELECT c.relname, coalesce(pg_get_expr(i.indpred, i.indrelid), 'true') FROM pg_index i "
            "JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = 'oqron_runs'::regclass").fetchall())
        entries = {name: {kind: n for kind, n in conn.execute(
            f"SELECT record_kind, count(*) FROM oqron_runs WHERE {predicate} GROUP BY record_kind").fetchall()}
            for name, predicate in predicates.items()}
    assert entries["oqron_runs_pkey"] == {"run": 30, "message": 200}
    for name in ("oqron_runs_run_name_started_f8_idx", "oqron_runs_run_started_f8_idx",
                 "oqron_runs_run_worker_started_f8_idx"):
        assert entries[name] == {"run": 30}, (name, entries[name])
    assert entries["oqron_runs_log_offset_idx"] == {"message": 200}
