"""``HotPlane.sample`` reads off indexes on the SQL hot planes, so the plane drift costs
the same on a queue of any size: the lapsing-first leases off the lease-expiry index,
the ids off the primary key, never a sort over the queue's rows."""

from __future__ import annotations

import sqlite3
from typing import Any

import psycopg

from oqronkit.backends.hot_types import Signal
from oqronkit.backends.postgres import PostgresHotPlane
from oqronkit.backends.postgres.hot import QUERIES as PG_QUERIES
from oqronkit.backends.sqlfiles import load_queries
from oqronkit.backends.sqlite_hot import SQLiteHotPlane
from oqronkit.backends.types import Scope

NOW = 1_700_000_000_000
SQLITE_QUERIES = load_queries("oqronkit.backends", "sql/sqlite/hot_queries.sql")


def fill(plane: Any, scope: Scope, queue: str = "big") -> None:
    """A big queue (ready, delayed, leased) beside another one, as a busy scope holds."""
    for name in (queue, "other"):
        plane.signal(scope, name, [Signal(f"r{i:05d}") for i in range(4000)], NOW)
        plane.signal(scope, name, [Signal(f"d{i:05d}", run_at=NOW + 60_000 + i) for i in range(2000)], NOW)
        plane.claim(scope, name, worker_id="w", limit=1500, lease_ms=30_000, now=NOW)


def nodes(plan: dict[str, Any]):
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def test_postgres_sample_reads_off_its_indexes(pg_schema_url: str, scope_names):
    scope = Scope(*scope_names)
    plane = PostgresHotPlane(pg_schema_url)
    plane.ensure_ready()
    try:
        fill(plane, scope)
        with psycopg.connect(pg_schema_url, autocommit=True) as conn:
            conn.execute("ANALYZE oqron_hot_jobs")
            params = {"project": scope.project, "environment": scope.environment, "queue": "big", "limit": 200}
            # One statement, both parts off their index: the ids and the lapsing-first leases.
            plan = conn.execute("EXPLAIN (FORMAT JSON) " + PG_QUERIES["sample"], params).fetchone()[0][0]["Plan"]
            found = list(nodes(plan))
            assert {"oqron_hot_jobs_pkey", "oqron_hot_jobs_lease_idx"} <= {n.get("Index Name") for n in found}, plan
            assert not any(n["Node Type"] in ("Sort", "Seq Scan") for n in found), plan
        assert len(plane.sample(scope, "big", limit=200).leases) == 200
    finally:
        plane.close()


def test_sqlite_sample_reads_off_its_indexes(tmp_path, scope_names):
    scope = Scope(*scope_names)
    path = str(tmp_path / "hot.sqlite3")
    plane = SQLiteHotPlane(path)
    plane.ensure_ready()
    try:
        fill(plane, scope)
    finally:
        plane.close()
    with sqlite3.connect(path) as conn:
        conn.execute("ANALYZE")
        params = (scope.project, scope.environment, "big", 200)
        for name, index in (("sample_entries", "PRIMARY KEY"), ("sample_leases", "oqron_hot_leases_expiry_idx")):
            plan = " | ".join(row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + SQLITE_QUERIES[name], params))
            assert index in plan and "TEMP B-TREE" not in plan, (name, plan)
