"""Every dashboard query of the storage model (docs/explanation/storage-model.md) is served by
an index on Postgres, at scale, as the spec writes it.

One private schema is filled by SQL alone (``INSERT ... SELECT generate_series``: seconds,
where the store's own writes would take minutes): in ``oqron_runs`` 1,000,000 retained
messages over 20 topics and 200,000 runs, 100,000 jobs (5% dead letters) and 100,000
records (module logs, the bulk; 2% definitions), each table shared with another scope.
Each query is then explained verbatim (``EXPLAIN (FORMAT JSON)``; the planner's own
choice, no ``enable_*`` setting changed) and must scan the index below, with no
sequential scan and no sort anywhere in its plan:

1. failed runs, most recent first: ``oqron_runs_other_status_started_idx``, backwards;
2. dead-letter depth per queue: ``oqron_jobs_dead_kind_idx``, in namespace order;
3. every definition the app runs: ``oqron_records_kind_idx``;
4. a specific run (by id, no namespace): ``oqron_runs_id_idx``;
5. the retained log of one topic, newest first: ``oqron_runs_message_published_idx``,
   backwards.

On a handful of rows a sequential scan is the right plan for any of them, hence the
large tables. ``test_postgres_specific`` checks that the five queries run unchanged
and return what they say, and plans queries 1 and 5 again on rows the store wrote."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from oqronkit.backends.postgres import PostgresDurableStore
from tests.engine.durable.test_postgres_specific import (
    SPEC_DEFINITIONS,
    SPEC_DLQ_DEPTH,
    SPEC_FAILED_RUNS,
    SPEC_ONE_RUN,
    SPEC_TOPIC_LOG,
    explain,
    plan_nodes,
)

MESSAGES = 1_000_000
RUNS = 200_000
TOPICS = 20  # topic_msg:order-events, the spec's, and 19 others

# The spec's own scope ('my-app', 'production'): its queries run with no substitution
# but the run id. Ids are time-ordered 26-character hex, like ids.new_id()'s.
# oqron_runs: runs over 7 names, 2 modules and 5 workers; statuses 80% completed, 10%
# failed, 10% running; one run in ten is another environment's.
SEED_RUNS = f"""
INSERT INTO oqron_runs (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT 'my-app', CASE WHEN (n / 10) % 10 = 0 THEN 'staging' ELSE 'production' END, 'runs', 'run', id,
       jsonb_build_object(
           'id', id, 'name', 'q' || n % 7, 'module', (ARRAY['queue', 'cron'])[1 + n % 2],
           'status', CASE n % 10 WHEN 0 THEN 'failed' WHEN 1 THEN 'running' ELSE 'completed' END,
           'trigger', 'queue', 'attempts', 1, 'workerId', 'w' || n % 5, 'jobId', 'j' || id,
           'startedAt', at, 'endedAt', at + 500, 'durationMs', 500),
       at
FROM (SELECT n, 1751587200000 + n * 60 AS at,
             lpad(to_hex(1751587200000 + n * 60), 12, '0') || lpad(to_hex(n), 14, '0') AS id
      FROM generate_series(1, {RUNS}) AS n) AS s
"""
# ... and the retained messages, 50,000 per topic, publishedAt rising. Each topic's rows
# are stored together (as a topic published in bursts would): the physical order only
# moves the planner's correlation estimates, every plan below beats its alternatives by
# orders of magnitude either way, and presorted rows halve the index builds.
SEED_MESSAGES = f"""
INSERT INTO oqron_runs (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT 'my-app', 'production',
       CASE WHEN t = 0 THEN 'topic_msg:order-events' ELSE 'topic_msg:topic-' || lpad(t::text, 2, '0') END,
       'message', lpad(to_hex(1751587200000 + k * 12), 12, '0') || lpad(to_hex(1000000000 + k), 14, '0'),
       jsonb_build_object('publishedAt', 1751587200000 + k * 12, 'payload', jsonb_build_object('n', k)),
       1751587200000 + k * 12
FROM (SELECT t, t * {MESSAGES // TOPICS} + j AS k
      FROM generate_series(0, {TOPICS - 1}) AS t, generate_series(1, {MESSAGES // TOPICS}) AS j
      ORDER BY t, j) AS s
"""
# oqron_jobs: waiting jobs and, one in twenty, dead letters, over 7 queues; one row in
# ten is another project's.
SEED_JOBS = """
INSERT INTO oqron_jobs (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT CASE WHEN (i / 20) % 10 = 0 THEN 'other-app' ELSE 'my-app' END, 'production',
       CASE WHEN i % 20 = 0 THEN 'queue_dlq:q' ELSE 'queue_job:q' END || i % 7,
       CASE WHEN i % 20 = 0 THEN 'dlq' ELSE 'job' END,
       'j' || i,
       CASE WHEN i % 20 = 0
            THEN jsonb_build_object('status', 'dead', 'createdAt', at, 'diedAt', at + 1000,
                                    'errorFingerprint', 'f' || i % 13)
            ELSE jsonb_build_object('status', 'waiting', 'createdAt', at) END,
       at
FROM (SELECT i, 1751587200000 + i * 10 AS at FROM generate_series(1, 100000) AS i) AS s
"""
# oqron_records: module logs (opt-in; what makes this table large), and one row in fifty
# a definition, one in fifty a control record; one row in ten is another project's.
SEED_RECORDS = """
INSERT INTO oqron_records (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT CASE WHEN (i / 50) % 10 = 0 THEN 'other-app' ELSE 'my-app' END, 'production',
       CASE i % 50 WHEN 0 THEN (ARRAY['cron', 'schedule', 'topic', 'webhook_endpoints:billing'])[1 + i / 50 % 4]
                   WHEN 1 THEN (ARRAY['queue', 'worker', 'topic_state'])[1 + i / 50 % 3]
                   ELSE 'module_logs:queue' END,
       CASE i % 50 WHEN 0 THEN 'definition' WHEN 1 THEN 'control' ELSE 'log' END,
       'r' || i, jsonb_build_object('n', i, 'at', 1751587200000 + i), 1751587200000 + i
FROM generate_series(1, 100000) AS i
"""

# (spec query, its text, the index that must serve it, walked backwards)
SPEC_PLANS = [
    (1, SPEC_FAILED_RUNS, "oqron_runs_other_status_started_idx", True),
    (2, SPEC_DLQ_DEPTH, "oqron_jobs_dead_kind_idx", False),
    (3, SPEC_DEFINITIONS, "oqron_records_kind_idx", False),
    (4, SPEC_ONE_RUN, "oqron_runs_id_idx", False),
    (5, SPEC_TOPIC_LOG, "oqron_runs_message_published_idx", True),
]


@pytest.fixture
def spec_tables(fresh_schema_url: str) -> Iterator[str]:
    """The three tables, filled as the module docstring says, vacuumed and analyzed.

    The store creates the schema, its secondary indexes are dropped, the rows go in and
    the store's ensure_schema() builds every index again, as at an engine's start on an
    existing database: one sorted build per index, faster than inserting 1,400,000
    rows through all of them. The tables are UNLOGGED for the test (no WAL to write):
    the planner does not look at that.
    """
    store = PostgresDurableStore(fresh_schema_url)
    try:
        store.ensure_schema()
        with psycopg.connect(fresh_schema_url, autocommit=True) as conn:
            for (name,) in conn.execute(
                    "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() "
                    "AND indexname NOT LIKE '%_pkey'").fetchall():
                conn.execute(psycopg.sql.SQL("DROP INDEX {}").format(psycopg.sql.Identifier(name)))
            for table in ("oqron_runs", "oqron_jobs", "oqron_records"):
                conn.execute(f"ALTER TABLE {table} SET UNLOGGED")  # our fixed names
            for seed in (SEED_RUNS, SEED_MESSAGES, SEED_JOBS, SEED_RECORDS):
                conn.execute(seed)
        store.ensure_schema()
        with psycopg.connect(fresh_schema_url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE oqron_runs, oqron_jobs, oqron_records")
            counts = conn.execute(
                "SELECT count(*) FILTER (WHERE record_kind = 'message'), count(*) FILTER (WHERE record_kind = 'run'),"
                " count(DISTINCT namespace) FILTER (WHERE record_kind = 'message') FROM oqron_runs").fetchone()
        assert counts == (MESSAGES, RUNS, TOPICS)
        yield fresh_schema_url
    finally:
        store.close()


def index_scans(plan: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {node["Index Name"]: node for node in plan_nodes(plan) if "Index Name" in node}


@pytest.mark.slow
def test_every_spec_query_is_index_served_at_scale(spec_tables: str):
    with psycopg.connect(spec_tables, autocommit=True) as conn:
        run_id = conn.execute(
            "SELECT id FROM oqron_runs WHERE project = 'my-app' AND environment = 'production' "
            "AND namespace = 'runs' ORDER BY id OFFSET 77777 LIMIT 1").fetchone()[0]
        problems = []
        for number, text, index, backwards in SPEC_PLANS:
            sql = text.replace("'<run-id>'", f"'{run_id}'")  # a generated hex id: no quoting involved
            plan = explain(conn, sql)
            scans = index_scans(plan)
            wrong = sorted({node["Node Type"] for node in plan_nodes(plan)} & {"Seq Scan", "Sort", "Incremental Sort"})
            if index not in scans:
                problems.append(f"query {number}: {index} is not scanned\n{sql}\n{plan}")
            elif backwards and scans[index]["Scan Direction"] != "Backward":
                problems.append(f"query {number}: {index} is not walked backwards\n{sql}\n{plan}")
            elif wrong:
                problems.append(f"query {number}: {wrong}\n{sql}\n{plan}")
        assert not problems, "\n\n".join(problems)

        # The plans answer what the queries ask.
        one_run = conn.execute(SPEC_ONE_RUN.replace("'<run-id>'", f"'{run_id}'")).fetchall()
        assert [row[0]["id"] for row in one_run] == [run_id]
        log = [row[0] for row in conn.execute(SPEC_TOPIC_LOG)]
        newest = conn.execute(
            "SELECT max((value->>'publishedAt')::numeric) FROM oqron_runs "
            "WHERE namespace = 'topic_msg:order-events'").fetchone()[0]
        published = [entry["publishedAt"] for entry in log]
        assert len(log) == 50 and published == sorted(published, reverse=True) and published[0] == newest
        # Dead letters are every 20th job, in queue i % 7, one in ten another project's.
        dead = Counter(f"queue_dlq:q{i % 7}" for i in range(20, 100_001, 20) if (i // 20) % 10)
        assert dict(conn.execute(SPEC_DLQ_DEPTH).fetchall()) == dead
