"""Issue 37 item 6: the board's reads that were not index-served at scale, planned by
Postgres' own choices (no ``enable_*`` setting changed) over SQL-seeded tables where a
scan would be the wrong plan.

- The overview's last hour of runs: with no statistics on ``startedAt`` (every index on
  it is partial or has it after the key columns) the planner guessed a third of the
  table and read it all; ``oqron_runs_started_stats`` gives it the histogram."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from oqronkit.backends.postgres import PostgresDurableStore
from tests.engine.durable.test_postgres_specific import explain, plan_nodes

RUNS = 100_000
STEP_MS = 6_000  # one run every 6 s: a week of runs, 600 in the last hour
# Each run ~800 bytes, as a run record with its input, output and timeline is.
BASE = 1_765_000_000_000
SEED_RUNS = f"""
INSERT INTO oqron_runs (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT 'shop', 'production', 'runs', 'run', lpad(to_hex(n), 26, '0'),
       jsonb_build_object('id', lpad(to_hex(n), 26, '0'), 'name', 'q' || n % 7, 'module', 'queue',
                          'status', CASE WHEN n % 20 = 0 THEN 'failed' ELSE 'completed' END,
                          'startedAt', {BASE} + n * {STEP_MS}, 'input', repeat('x', 700)),
       {BASE} + n * {STEP_MS}
FROM generate_series(1, {RUNS}) AS n
"""
# oqronboard.runs.queries.last_hour_counts, as Django renders it.
LAST_HOUR = """
SELECT (value->>'name') AS name, (value->>'module') AS module, (value->>'status') AS status,
       FLOOR((((value->>'startedAt')::float8) / 300000)) AS bucket, COUNT(*) AS count
FROM oqron_runs
WHERE environment = 'production' AND project = 'shop' AND namespace = 'runs'
  AND ((value->>'startedAt')::float8) >= %(since)s
GROUP BY 1, 2, 3, 4
"""


@pytest.fixture
def runs_table(fresh_schema_url: str) -> Iterator[str]:
    store = PostgresDurableStore(fresh_schema_url)
    try:
        store.ensure_schema()
        with psycopg.connect(fresh_schema_url, autocommit=True) as conn:
            conn.execute("ALTER TABLE oqron_runs SET UNLOGGED")  # no WAL: the planner does not look at it
            conn.execute(SEED_RUNS)
            conn.execute("VACUUM ANALYZE oqron_runs")
        yield fresh_schema_url
    finally:
        store.close()


def last_hour_plan(conn: psycopg.Connection) -> dict:
    return explain(conn, LAST_HOUR, {"since": float(BASE + RUNS * STEP_MS - 3_600_000)})


@pytest.mark.slow
def test_the_overviews_last_hour_reads_the_started_index(runs_table: str):
    with psycopg.connect(runs_table, autocommit=True) as conn:
        nodes = list(plan_nodes(last_hour_plan(conn)))
        scans = {n.get("Index Name") for n in nodes}
        assert "oqron_runs_run_started_f8_idx" in scans, nodes
        assert "Seq Scan" not in {n["Node Type"] for n in nodes}, nodes
        estimated = max(n["Plan Rows"] for n in nodes if n.get("Index Name"))
        assert estimated < RUNS // 20, f"the last hour (600 runs) estimated at {estimated} rows"

        # Without the statistics object the guess is a third of the table: the test can fail.
        conn.execute("DROP STATISTICS oqron_runs_started_stats")
        conn.execute("ANALYZE oqron_runs")
        guessed = max(n["Plan Rows"] for n in plan_nodes(last_hour_plan(conn)))
        assert guessed > RUNS // 5
