"""A correlation id's rows are read through the correlation indexes in each table, on
Postgres (EXPLAIN over SQL-seeded tables where a scan would be the wrong plan) and SQLite
(EXPLAIN QUERY PLAN), and an existing database gains the indexes at its next start."""

from __future__ import annotations

import sqlite3

import psycopg
import pytest

from oqronkit import DurablePlane, RecordWrite
from oqronkit.backends.postgres import PostgresDurableStore
from oqronkit.backends.postgres.statements import composed, list_plan
from oqronkit.backends.sqlite import SQLiteDurableStore, list_statement
from oqronkit.backends.types import ListQuery, Scope
from tests.engine.durable.test_postgres_specific import explain, plan_nodes

TABLES = ("runs", "jobs", "records")
INDEXES = {t: f"oqron_{t}_correlation_idx" for t in TABLES}
ROWS = 200_000
# One row in 200 carries one of 1,000 ids; the id 'hot' is on 200 rows of each table.
SEED = """
INSERT INTO oqron_{table} (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT 'shop', 'production', '{namespace}', '{kind}', lpad(n::text, 10, '0'),
       CASE WHEN n % 200 = 0 THEN jsonb_build_object('startedAt', n, 'correlationId',
                                                     CASE WHEN n % 1000 = 0 THEN 'hot' ELSE 'c' || n % 997 END)
            ELSE jsonb_build_object('startedAt', n) END,
       n
FROM generate_series(1, {rows}) AS n
"""
NAMESPACES = {"runs": ("runs", "run"), "jobs": ("queue_job:emails", "job"), "records": ("module_logs:queue", "log")}


def test_postgres_reads_a_correlation_id_through_its_index(fresh_schema_url: str):
    store = PostgresDurableStore(fresh_schema_url)
    try:
        store.ensure_schema()
        with psycopg.connect(fresh_schema_url, autocommit=True) as conn:
            for table, (namespace, kind) in NAMESPACES.items():
                conn.execute(SEED.format(table=table, namespace=namespace, kind=kind, rows=ROWS))  # fixed names
            conn.execute("ANALYZE oqron_runs, oqron_jobs, oqron_records")
            scope = Scope("shop", "production")
            for table in TABLES:
                parts, params = list_plan(scope, ListQuery(table=table, correlation="hot", limit=1001))
                plan = explain(conn, composed(table, parts), params)
                nodes = list(plan_nodes(plan))
                used = {n.get("Index Name") for n in nodes}
                assert INDEXES[table] in used and "Seq Scan" not in {n["Node Type"] for n in nodes}, plan
        plane = DurablePlane(store, project="shop", environment="production")
        assert len(plane.list(table="runs", correlation="hot", limit=1000).records) == ROWS // 1000
        # An existing database without them (an older version's) builds them at its next start.
        with psycopg.connect(fresh_schema_url, autocommit=True) as conn:
            for name in INDEXES.values():
                conn.execute(psycopg.sql.SQL("DROP INDEX {}").format(psycopg.sql.Identifier(name)))
        store.ensure_schema()
        with psycopg.connect(fresh_schema_url, autocommit=True) as conn:
            found = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")}
        assert set(INDEXES.values()) <= found
    finally:
        store.close()


@pytest.mark.parametrize("table", TABLES)
def test_sqlite_reads_a_correlation_id_through_its_index(tmp_path, table: str):
    path = str(tmp_path / "oqron.sqlite3")
    store = SQLiteDurableStore(path)
    plane = DurablePlane(store, project="shop", environment="production")
    plane.start()
    namespace = NAMESPACES[table][0]
    plane.put_many(RecordWrite(namespace, f"r{i:05d}", {"startedAt": i, **({"correlationId": f"c{i % 7}"}
                                                                          if i % 10 == 0 else {})})
                   for i in range(2000))
    sql, params = list_statement(Scope("shop", "production"), ListQuery(table=table, correlation="c3", limit=51))
    with sqlite3.connect(path) as conn:
        conn.execute("ANALYZE")
        steps = [row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params)]
    assert any(INDEXES[table] in step for step in steps) and not any("TEMP B-TREE" in s for s in steps), steps
    assert {r.id for r in plane.list(table=table, correlation="c3", limit=1000).records} == {
        f"r{i:05d}" for i in range(0, 2000, 10) if i % 7 == 3}
    with sqlite3.connect(path) as conn:
        conn.execute(f"DROP INDEX {INDEXES[table]}")  # our fixed name
    store.ensure_schema()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (INDEXES[table],)).fetchone()
    plane.close()
