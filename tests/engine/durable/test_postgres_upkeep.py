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
from oqronkit.backends.postgres.upkeep import VACUUM_AFTER_DEAD
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
            assert store.upkeep() == ["analyze oqron_jobs"]
            assert table_stats(schema_url, "oqron_jobs")["analyzed"] is not None
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
