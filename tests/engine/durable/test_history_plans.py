"""The rollup reads one minute of runs as one range of the startedAt index (no new index:
oqron_runs_run_started_f8_idx), and a history reads its buckets by primary key, on
PostgreSQL over SQL-seeded tables where a scan would be the wrong plan."""

from __future__ import annotations

import psycopg

from oqronkit.backends.postgres import PostgresDurableStore
from oqronkit.backends.postgres.statements import composed, list_plan
from oqronkit.backends.types import ListQuery, Scope
from oqronkit.namespaces import RUNS
from tests.engine.durable.test_postgres_specific import explain, plan_nodes

ROWS = 1_000_000  # fewer, and a sequential scan is the cheaper plan (200,000 rows: it is)
SEED = """
INSERT INTO oqron_runs (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT 'shop', 'production', 'runs', 'run', lpad(n::text, 10, '0'),
       jsonb_build_object('startedAt', 1765000000000 + n * 60, 'name', 'q' || n % 40, 'status',
                          CASE WHEN n % 20 = 0 THEN 'failed' ELSE 'completed' END, 'module', 'queue'),
       n
FROM generate_series(1, {rows}) AS n
"""


def test_a_minute_of_runs_is_one_range_of_the_started_index(fresh_schema_url: str):
    store = PostgresDurableStore(fresh_schema_url)
    try:
        store.ensure_schema()
        with psycopg.connect(fresh_schema_url, autocommit=True) as conn:
            # Seeded without the run indexes (ensure_schema builds the missing ones again): 4x faster.
            for (name,) in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'oqron_runs' "
                                        "AND schemaname = current_schema() AND indexname <> 'oqron_runs_pkey'"
                                        ).fetchall():
                conn.execute(psycopg.sql.SQL("DROP INDEX {}").format(psycopg.sql.Identifier(name)))
            conn.execute(SEED.format(rows=ROWS))  # a fixed count
        store.ensure_schema()
        with psycopg.connect(fresh_schema_url, autocommit=True) as conn:
            conn.execute("ANALYZE oqron_runs")
            minute = 1765000000000 + 600_000
            query = ListQuery(table="runs", namespace=RUNS, started_from=minute, started_to=minute + 60_000,
                              order="started", limit=1001)
            parts, params = list_plan(Scope("shop", "production"), query)
            nodes = list(plan_nodes(explain(conn, composed("runs", parts), params)))
            used = {n.get("Index Name") for n in nodes}
            assert "oqron_runs_run_started_f8_idx" in used, nodes
            assert not {"Seq Scan", "Sort", "Bitmap Heap Scan"} & {n["Node Type"] for n in nodes}, nodes
    finally:
        store.close()
