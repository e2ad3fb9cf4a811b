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
  AND (namespace, ((value->>'startedAt')::float8)) >= ('runs', %(since)s)
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
        # The range bounds the scan: the row comparison stays an index condition (the
        # equality on namespace alone is dropped, implied by the index's predicate).
        scan = next(n for n in nodes if n.get("Index Name"))
        assert "ROW(namespace" in scan["Index Cond"], scan
        analyze = psycopg.sql.SQL("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ") + psycopg.sql.SQL(LAST_HOUR)
        since = {"since": float(BASE + RUNS * STEP_MS - 3_600_000)}
        analyzed = conn.execute(analyze, since).fetchone()[0][0]["Plan"]
        blocks = analyzed["Shared Hit Blocks"] + analyzed["Shared Read Blocks"]
        assert blocks < 400, f"{blocks} blocks read for 600 runs: the scan is not bounded by the range"

        # Without the statistics object the guess is a third of the table: the test can fail.
        conn.execute("DROP STATISTICS oqron_runs_started_stats")
        conn.execute("ANALYZE oqron_runs")
        guessed = max(n["Plan Rows"] for n in plan_nodes(last_hour_plan(conn)))
        assert guessed > RUNS // 5


DEAD = 30_000
# One dead letter in 20 a declined card, the rest two other errors; 'cus_00042' is on one.
SEED_DEAD = f"""
INSERT INTO oqron_jobs (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT 'shop', 'production', 'queue_dlq:billing', 'dlq', 'd' || n,
       jsonb_build_object('id', 'd' || n, 'status', 'dead', 'diedAt', {BASE} + n, 'errorFingerprint', 'f' || n % 3,
                          'lastError', jsonb_build_object('type', 'E', 'message',
                              CASE WHEN n % 20 = 0 THEN 'card declined for customer cus_' || lpad(n::text, 5, '0')
                                   WHEN n % 2 = 0 THEN 'gateway timed out after ' || n || ' ms'
                                   ELSE 'connection refused by 10.0.' || n % 250 || '.7:443' END)),
       {BASE} + n
FROM generate_series(1, {DEAD}) AS n
"""
# oqronboard.jobs.queries.dead_queryset with a search, as Django renders it.
DEAD_SEARCH = """
SELECT id, value->'lastError'->>'message' FROM oqron_jobs
WHERE environment = 'production' AND project = 'shop' AND record_kind = 'dlq'
  AND (CASE WHEN jsonb_typeof(value->'diedAt') = 'number' THEN (value->>'diedAt')::numeric END) IS NOT NULL
  AND UPPER((value->'lastError'->>'message')::text) LIKE UPPER(%(pattern)s)
ORDER BY (CASE WHEN jsonb_typeof(value->'diedAt') = 'number' THEN (value->>'diedAt')::numeric END) DESC,
         (id COLLATE "C") DESC
LIMIT 51
"""


def seed_dead(url: str) -> PostgresDurableStore:
    store = PostgresDurableStore(url)
    store.ensure_schema()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(SEED_DEAD)
        conn.execute("VACUUM ANALYZE oqron_jobs")
    return store


@pytest.mark.slow
def test_the_dead_letter_search_reads_the_trigram_index(fresh_schema_url: str):
    store = seed_dead(fresh_schema_url)
    try:
        assert store.text_search_indexed
        with psycopg.connect(fresh_schema_url, autocommit=True) as conn:
            for pattern in ("%CUS_00040%", "%declined%"):
                nodes = list(plan_nodes(explain(conn, DEAD_SEARCH, {"pattern": pattern})))
                assert "oqron_jobs_dlq_message_trgm_idx" in {n.get("Index Name") for n in nodes}, nodes
                assert "Seq Scan" not in {n["Node Type"] for n in nodes}, nodes
            found = conn.execute(DEAD_SEARCH, {"pattern": "%cus_00040%"}).fetchall()
            assert found == [("d40", "card declined for customer cus_00040")]
            declined = conn.execute(DEAD_SEARCH, {"pattern": "%DECLINED%"}).fetchall()
            assert [r[0] for r in declined] == [f"d{n}" for n in range(DEAD, DEAD - 51 * 20, -20)]
    finally:
        store.close()


def test_without_pg_trgm_the_search_scans_and_answers_the_same(fresh_schema_url: str, monkeypatch):
    from oqronkit.backends.postgres import search

    # What a server without the contrib package answers (the extension's control file is missing).
    monkeypatch.setitem(search.SEARCH_SCHEMA, "search_extension", "CREATE EXTENSION IF NOT EXISTS oqron_not_there")
    store = PostgresDurableStore(fresh_schema_url)
    try:
        store.ensure_schema()  # no error: the rest of the schema is there
        assert not store.text_search_indexed
        with psycopg.connect(fresh_schema_url, autocommit=True) as conn:
            assert conn.execute("SELECT to_regclass('oqron_jobs_dlq_message_trgm_idx')").fetchone()[0] is None
            assert conn.execute("SELECT to_regclass('oqron_jobs_dlq_died_idx')").fetchone()[0] is not None
            conn.execute(SEED_DEAD.replace(f"{DEAD})", "100)"))
            found = conn.execute(DEAD_SEARCH, {"pattern": "%cus_00040%"}).fetchall()
        assert found == [("d40", "card declined for customer cus_00040")]
    finally:
        store.close()


@pytest.mark.slow
def test_the_groups_count_each_groups_dead_letters_once(fresh_schema_url: str):
    from oqronboard.jobs.queries import _GROUP_EXPRESSIONS, _GROUPS_SQL

    store = seed_dead(fresh_schema_url)
    where = "project = %(p)s AND environment = %(e)s AND record_kind = 'dlq'"
    sql = _GROUPS_SQL.format(where=where, limit=50, counted=DEAD + 1, **_GROUP_EXPRESSIONS["postgresql"])  # uncapped
    try:
        with psycopg.connect(fresh_schema_url, autocommit=True) as conn:
            params = {"p": "shop", "e": "production"}
            counts = [n for n in plan_nodes(explain(conn, sql, params)) if n["Node Type"] == "Aggregate"]
            assert len(counts) == 1, counts  # one count(*) subplan, run once per group
            rows = conn.execute(sql, params).fetchall()
        assert sorted((fp, stats) for fp, stats, *_ in rows) == [
            ("f0", f"{DEAD // 3},1,queue_dlq:billing"), ("f1", f"{DEAD // 3},1,queue_dlq:billing"),
            ("f2", f"{DEAD // 3},1,queue_dlq:billing")]
    finally:
        store.close()


MESSAGES = 100_000
# Ten topics of 10,000 messages; keys of 2,000 customers, one message in ten without a key.
SEED_MESSAGES = f"""
INSERT INTO oqron_runs (project, environment, namespace, record_kind, id, value, inserted_at)
SELECT 'shop', 'production', 'topic_msg:t' || n % 10, 'message', lpad(to_hex(n), 26, '0'),
       jsonb_build_object('id', lpad(to_hex(n), 26, '0'), 'partition', 0, 'offset', n / 10,
                          'publishedAt', {BASE} + n, 'payload', jsonb_build_object('pad', repeat('x', 300)))
       || CASE WHEN n % 10 = 3 THEN '{{}}'::jsonb ELSE jsonb_build_object('key', 'cus_' || n % 2000) END,
       {BASE} + n
FROM generate_series(1, {MESSAGES}) AS n
"""
# oqronboard.runs.topics.message_page with a key, as Django renders it.
LOG_BY_KEY = """
SELECT id, (value->>'publishedAt') FROM oqron_runs
WHERE environment = 'production' AND project = 'shop' AND record_kind = 'message'
  AND namespace = 'topic_msg:t7' AND (value->>'key') = %(key)s
ORDER BY ((value->>'publishedAt')::numeric) DESC, (id COLLATE "C") DESC
LIMIT 51
"""


@pytest.mark.slow
def test_a_topic_log_filtered_on_a_key_reads_the_key_index(fresh_schema_url: str):
    store = PostgresDurableStore(fresh_schema_url)
    try:
        store.ensure_schema()
        with psycopg.connect(fresh_schema_url, autocommit=True) as conn:
            conn.execute("ALTER TABLE oqron_runs SET UNLOGGED")
            conn.execute(SEED_MESSAGES)
            conn.execute("VACUUM ANALYZE oqron_runs")
            nodes = list(plan_nodes(explain(conn, LOG_BY_KEY, {"key": "cus_17"})))
            assert "oqron_runs_message_key_idx" in {n.get("Index Name") for n in nodes}, nodes
            assert "Seq Scan" not in {n["Node Type"] for n in nodes}, nodes
            found = [row[0] for row in conn.execute(LOG_BY_KEY, {"key": "cus_17"})]
        # cus_17 is on n = 17 + 2000 k; in topic t7 every such n (n % 10 = 7), newest first.
        assert found == [f"{n:026x}" for n in range(MESSAGES - 2000 + 17, 0, -2000)]
    finally:
        store.close()
