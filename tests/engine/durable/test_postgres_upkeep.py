"""Table upkeep: ANALYZE / VACUUM of our PostgreSQL tables where autovacuum lags (the CI
server runs with autovacuum off), and what it is for: primary-key plans for a batch's
lookups once the planner has statistics."""

from __future__ import annotations

import time
import uuid
from typing import Any

import psycopg
import pytest

from oqronkit.backends.hot_types import Signal
from oqronkit.backends.postgres import PostgresDurableStore
from oqronkit.backends.postgres.hot import PostgresHotPlane
from oqronkit.backends.postgres.upkeep import VACUUM_AFTER_DEAD, VACUUM_AFTER_INSERTS
from oqronkit.backends.types import Scope
from oqronkit.config import OqronConfig
from oqronkit.durable import DurablePlane
from oqronkit.engine import Engine
from oqronkit.errors import ConfigurationError
from oqronkit.services import Services


@pytest.fixture
def schema_url(fresh_schema_url: str) -> str:
    """A schema of this test only: the counters upkeep reads are per table."""
    return fresh_schema_url


def table_stats(url: str, table: str) -> dict[str, Any]:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT n_mod_since_analyze, n_dead_tup, greatest(last_analyze, last_autoanalyze), "
            "greatest(last_vacuum, last_autovacuum) FROM pg_stat_user_tables WHERE relid = to_regclass(%s)",
            [table],
        ).fetchone()
    assert row is not None
    return dict(zip(("changed", "dead", "analyzed", "vacuumed"), row, strict=True))


def wait_for_counters(url: str, table: str, field: str, at_least: int) -> None:
    """Sessions report their counters to pg_stat a little after they go idle."""
    deadline = time.monotonic() + 10
    while table_stats(url, table)[field] < at_least:
        assert time.monotonic() < deadline, f"pg_stat never showed {at_least} {field} rows of {table}"
        time.sleep(0.1)


def all_visible_share(url: str, table: str) -> float:
    """The share of the table's pages VACUUM marked all-visible (index-only scans skip them)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT relallvisible::float8 / greatest(relpages, 1) FROM pg_class "
                           "WHERE oid = to_regclass(%s)", [table]).fetchone()
    assert row is not None
    return float(row[0])


def get_many_plan(url: str, project: str) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "EXPLAIN SELECT value FROM oqron_jobs WHERE project = %s AND environment = 'test' "
            "AND namespace = 'queue_job:emails' AND id = ANY(%s::text[])",
            [project, [f"job-{i}" for i in range(50)]],
        ).fetchall()
    return "\n".join(r[0] for r in rows)


def test_a_bulk_enqueue_gets_statistics_and_primary_key_lookups(schema_url: str) -> None:
    project = f"p-{uuid.uuid4().hex[:8]}"
    plane = DurablePlane(PostgresDurableStore(schema_url), project=project, environment="test")
    plane.start()
    try:
        count = 40_000  # enough rows that 50 primary-key probes beat reading the table
        plane.insert_new_json("queue_job:emails", ((f"job-{i}", '{"status":"waiting","createdAt":1}')
                                                   for i in range(count)))
        plane.close()  # a session reports its counters when it ends
        wait_for_counters(schema_url, "oqron_jobs", "changed", count)
        assert table_stats(schema_url, "oqron_jobs")["analyzed"] is None

        store = PostgresDurableStore(schema_url)
        try:
            # 40,000 rows inserted, none vacuumed yet: their pages are marked all-visible too.
            assert store.upkeep() == ["analyze oqron_jobs", "vacuum oqron_jobs"]
            assert table_stats(schema_url, "oqron_jobs")["analyzed"] is not None
            assert all_visible_share(schema_url, "oqron_jobs") > 0.9
            # A batch's lookups are primary-key probes now, not a walk of the queue's rows.
            assert "oqron_jobs_pkey" in get_many_plan(schema_url, project)
            # Within the minute nothing runs again, whatever changed meanwhile.
            assert store.upkeep() == []
        finally:
            store.close()
    finally:
        plane.close()


def test_few_changes_leave_tables_alone(schema_url: str) -> None:
    plane = DurablePlane(PostgresDurableStore(schema_url), project="p-small", environment="test")
    plane.start()
    plane.insert_new_json("queue_job:emails", ((f"job-{i}", "{}") for i in range(10)))
    plane.close()
    wait_for_counters(schema_url, "oqron_jobs", "changed", 10)
    store = PostgresDurableStore(schema_url)
    try:
        assert store.upkeep() == []
    finally:
        store.close()


def test_a_churned_hot_table_is_vacuumed(schema_url: str) -> None:
    plane = PostgresHotPlane(schema_url)
    plane.ensure_ready()
    scope = Scope("p-hot", "test")
    try:
        # Every job signalled, claimed and acknowledged: each leaves dead row versions.
        count = VACUUM_AFTER_DEAD + 500
        for start in range(0, count, 1000):
            ids = range(start, min(start + 1000, count))
            plane.signal(scope, "q", [Signal(f"j{i}", 0, None, False) for i in ids], 1)
            leases = plane.claim(scope, "q", worker_id="w", limit=1000, lease_ms=60_000, now=1)
            plane.ack(scope, "q", leases)
    finally:
        plane.close()
    wait_for_counters(schema_url, "oqron_hot_jobs", "dead", VACUUM_AFTER_DEAD)
    plane = PostgresHotPlane(schema_url)
    try:
        assert "vacuum oqron_hot_jobs" in plane.upkeep()
        assert table_stats(schema_url, "oqron_hot_jobs")["vacuumed"] is not None
        assert "vacuum oqron_hot_jobs" not in plane.upkeep()  # not twice in a minute
    finally:
        plane.close()


def test_a_hot_table_is_not_vacuumed_for_inserts_alone(schema_url: str) -> None:
    plane = PostgresHotPlane(schema_url)
    plane.ensure_ready()
    try:
        count = VACUUM_AFTER_INSERTS + 500  # signalled, never claimed: inserts, no dead rows
        for start in range(0, count, 1000):
            ids = range(start, min(start + 1000, count))
            plane.signal(Scope("p-hot", "test"), "q", [Signal(f"j{i}", 0, None, False) for i in ids], 1)
    finally:
        plane.close()
    wait_for_counters(schema_url, "oqron_hot_jobs", "changed", VACUUM_AFTER_INSERTS)
    plane = PostgresHotPlane(schema_url)
    try:
        assert "vacuum oqron_hot_jobs" not in plane.upkeep()
    finally:
        plane.close()


def test_the_leader_runs_upkeep_on_its_own_thread_unless_turned_off(schema_url: str) -> None:
    for enabled in (True, False):
        config = OqronConfig(mode="postgres", database_url=schema_url, project="p-leader", environment="test",
                             table_upkeep=enabled)
        engine = Engine(config)
        try:
            services = Services(engine, worker_id="w1")
            services.run("upkeep")
            thread = services._upkeep
            assert (thread is not None) is enabled
            if thread is not None:
                thread.join(timeout=30)
                assert not thread.is_alive()
        finally:
            engine.close()


def test_table_upkeep_must_be_a_boolean() -> None:
    with pytest.raises(ConfigurationError, match="table_upkeep"):
        OqronConfig(mode="memory", database_url=None, table_upkeep="no")  # type: ignore[arg-type]



def explain(url: str, query: str | bytes, params: dict[str, Any]) -> str:
    text = query if isinstance(query, bytes) else query.encode()
    with psycopg.connect(url, autocommit=True) as conn:
        return "\n".join(r[0] for r in conn.execute(b"EXPLAIN " + text, params))


def index_condition(plan: str) -> str:
    return plan.split("Index Cond:")[1].splitlines()[0] if "Index Cond:" in plan else ""


def test_batch_lookups_probe_the_primary_key_before_statistics_know_the_queue(schema_url: str) -> None:
    """The worker's batch reads and deletes of jobs (and the hot plane's batch statements)
    stay primary-key probes when the statistics have never seen the project or queue:
    a burst into a new queue must not make every batch walk the whole queue."""
    from oqronkit.backends.postgres.hot import QUERIES as HOT_QUERIES
    from oqronkit.backends.postgres.statements import statement

    def fill(project: str, queue: str, count: int) -> None:
        plane = DurablePlane(PostgresDurableStore(schema_url), project=project, environment="test")
        plane.start()
        plane.insert_new_json(f"queue_job:{queue}", ((f"job-{i}", '{"status":"waiting","createdAt":1}')
                                                     for i in range(count)))
        plane.close()
        hot = PostgresHotPlane(schema_url)
        hot.ensure_ready()
        try:
            hot.signal(Scope(project, "test"), queue, [Signal(f"job-{i}", 0, None, False) for i in range(count)], 1)
        finally:
            hot.close()

    fill("p-old", "reports", 2_000)
    with psycopg.connect(schema_url, autocommit=True) as conn:
        for table in ("oqron_jobs", "oqron_hot_jobs"):  # statistics of the old project only
            conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
            conn.execute(f"ANALYZE {table}")
    fill("p-new", "emails", 20_000)
    ids = [f"job-{i}" for i in range(100, 140)]
    # The trap is real: the same lookup with its values in plain sight filters the queue.
    plain = explain(schema_url, "SELECT id FROM oqron_jobs WHERE project = 'p-new' AND environment = 'test' "
                                "AND namespace = 'queue_job:emails' AND id = ANY(%(ids)s::text[])", {"ids": ids})
    assert "id = ANY" not in index_condition(plain), plain
    keys = {"project": "p-new", "environment": "test", "namespace": "queue_job:emails", "ids": ids}
    for name in ("get_many", "delete_many"):
        plan = explain(schema_url, statement(name, "jobs"), keys)
        assert "oqron_jobs_pkey" in plan and "id = ANY" in index_condition(plan), plan
    hot_keys = {"project": "p-new", "environment": "test", "queue": "emails", "ids": ids}
    for name in ("present", "remove"):
        plan = explain(schema_url, HOT_QUERIES[name].encode(), hot_keys)
        assert "oqron_hot_jobs_pkey" in plan and "job_id = ANY" in index_condition(plan), plan
