"""Every list the board sorts is served by an index, and its main queries use one.

The board's queries are captured as Django runs them, then explained on the same
connection: Postgres must name the expected index and (for lists) sort nothing, SQLite
must search an index and build no temporary B-tree for the ORDER BY. Postgres explains
with sequential and bitmap scans off: a test-sized table is cheaper to scan and sort
than to walk in index order, which says nothing about millions of rows; what matters
is that an index *can* serve each query, in the order it needs. (The bench measures
the planner's own choices on 1,000,000 runs.)
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext

from oqronboard.base.audit import Action
from oqronboard.base.cursors import decode_cursor
from oqronboard.base.scope import BoardScope
from oqronboard.definitions.queries import audit_entries, definitions, queue_controls
from oqronboard.jobs.queries import DeadFilters, dead_groups, dead_list, dlq_depths, get_job, job_queues, queue_jobs
from oqronboard.overview import queue_states
from oqronboard.runs.queries import RunFilters, get_run, job_runs, last_hour_counts, run_list
from oqronkit import RecordWrite
from oqronkit.clock import now_ms
from oqronkit.namespaces import AUDIT
from tests.board.conftest import SharedDatabase
from tests.board.seed import dead_job, job_value, run_value

DAY = 24 * 3600 * 1000


def seed(db: SharedDatabase) -> None:
    rng = random.Random(7)
    now = now_ms()
    runs = []
    for i in range(3000):
        status = rng.choice(["completed"] * 8 + ["failed", "running"])
        runs.append(run_value(f"r{i:05d}", status=status, started=now - i * 20_000, name=rng.choice("abcde"),
                              module=rng.choice(["queue", "cron"]), job_id=f"j{i % 900}", worker=f"w{i % 7}"))
    jobs = [job_value("q", f"w{i}", status=rng.choice(["waiting", "delayed", "active"]), created=now - i * 1000)
            for i in range(1200)]
    jobs += [dead_job(rng.choice(["q", "p"]), f"d{i}", message=f"error kind {i % 9}", died=now - i * 1000)
             for i in range(600)]
    writes = [RecordWrite("runs", r["id"], r) for r in runs] + [RecordWrite(j.namespace, j.id, j.to_value())
                                                               for j in jobs]
    for start in range(0, len(writes), 500):
        db.plane.put_many(writes[start:start + 500])
    db.plane.put("queue", "q", {"name": "q", "paused": False})
    db.plane.put("queue", "p", {"name": "p", "paused": False})
    scope = BoardScope(db.project, db.environment)
    for i in range(30):
        Action(scope, "olivia", "retry", targets=[("q", f"d{i}")]).save(ok=True, result="ok")
    with connections[db.alias].cursor() as cursor:
        cursor.execute("ANALYZE oqron_runs" if db.alias != "default" else "ANALYZE")
        if db.alias != "default":
            cursor.execute("ANALYZE oqron_jobs")
            cursor.execute("ANALYZE oqron_records")


def plans(db: SharedDatabase, run: Callable[[], object]) -> list[str]:
    """The plan of every query ``run`` makes, as one text per query."""
    connection = connections[db.alias]
    with CaptureQueriesContext(connection) as captured:
        run()
    texts = []
    with connection.cursor() as cursor:
        for query in captured.captured_queries:
            sql = query["sql"]
            if db.alias == "default":
                cursor.execute("EXPLAIN QUERY PLAN " + sql)
                texts.append("\n".join(str(row[-1]) for row in cursor.fetchall()))
            else:
                cursor.execute("SET enable_seqscan = off; SET enable_bitmapscan = off")
                try:
                    cursor.execute("EXPLAIN " + sql)
                    texts.append("\n".join(row[0] for row in cursor.fetchall()))
                finally:
                    cursor.execute("RESET enable_seqscan; RESET enable_bitmapscan")
    return texts


def cursor_of(rows_and_cursor: tuple[list, str | None]) -> tuple[int, str]:
    assert rows_and_cursor[1] is not None
    return decode_cursor(rows_and_cursor[1])


Indexes = str | tuple[str, ...]  # an index name, or several: any of them


# (label, query, Postgres index, SQLite index, is an ordered list)
# "postgres": sorts nothing on Postgres; SQLite sorts what a subquery returns (bounded by it).
Ordered = bool | str


def cases(scope: BoardScope) -> list[tuple[str, Callable[[], object], Indexes, Indexes, Ordered]]:
    since = now_ms() - DAY
    page_two = cursor_of(run_list(scope, RunFilters(since=since, status="completed")))
    failed_two = cursor_of(run_list(scope, RunFilters(since=since, status="failed")))
    dead_two = cursor_of(dead_list(scope, DeadFilters()))
    return [
        ("runs, unfiltered", lambda: run_list(scope, RunFilters(since=since)),
         "oqron_runs_run_started_f8_idx", "oqron_runs_started_idx", True),
        ("failed runs", lambda: run_list(scope, RunFilters(since=since, status="failed")),
         "oqron_runs_other_status_started_f8_idx", "oqron_runs_status_idx", True),
        ("failed runs, page two", lambda: run_list(scope, RunFilters(since=since, status="failed", cursor=failed_two)),
         "oqron_runs_other_status_started_f8_idx", "oqron_runs_status_idx", True),
        # Completed runs, and runs of queues, are left out of the partial status and
        # module indexes: they walk the startedAt index.
        # SQLite's status index holds every status: either of its two indexes serves the
        # walk, and which one its planner takes depends on what else the file holds.
        ("completed runs, page two", lambda: run_list(scope, RunFilters(since=since, status="completed",
                                                                         cursor=page_two)),
         "oqron_runs_run_started_f8_idx", ("oqron_runs_started_idx", "oqron_runs_status_idx"), True),
        # SQLite's statistics span every test's rows: either index serves it without a sort.
        ("queue runs", lambda: run_list(scope, RunFilters(since=since, module="queue")),
         "oqron_runs_run_started_f8_idx", ("oqron_runs_module_idx", "oqron_runs_started_idx"), True),
        ("runs by name", lambda: run_list(scope, RunFilters(since=since, name="c")),
         "oqron_runs_run_name_started_f8_idx", "oqron_runs_name_idx", True),
        ("runs by module", lambda: run_list(scope, RunFilters(since=since, module="cron")),
         "oqron_runs_other_module_started_f8_idx", "oqron_runs_module_idx", True),
        ("runs by worker", lambda: run_list(scope, RunFilters(since=since, worker="w3")),
         "oqron_runs_run_worker_started_f8_idx", "oqron_runs_worker_idx", True),
        # On Postgres a hash of jobId: a job's few runs are sorted after the lookup.
        ("runs of a job", lambda: job_runs(scope, "j42"), "oqron_runs_job_idx", "oqron_runs_job_idx", False),
        # On Postgres the primary key or the run-id index (spec query 4's): one row either way.
        ("a run", lambda: get_run(scope, "r00042"), ("oqron_runs_pkey", "oqron_runs_id_idx"),
         "sqlite_autoindex_oqron_runs_1", False),
        ("last hour", lambda: last_hour_counts(scope, since=now_ms() - 3600_000, bucket_ms=300_000),
         "oqron_runs_run_started_f8_idx", "oqron_runs_started_idx", False),
        ("jobs of a queue", lambda: queue_jobs(scope, "q", "waiting"),
         "oqron_jobs_status_created_idx", "oqron_jobs_status_created_idx", True),
        ("a job", lambda: get_job(scope, "q", "w5"), "oqron_jobs_pkey", "sqlite_autoindex_oqron_jobs_1", False),
        ("dead letters", lambda: dead_list(scope, DeadFilters()),
         "oqron_jobs_dlq_all_died_idx", "oqron_jobs_dlq_all_died_idx", True),
        ("dead letters, page two", lambda: dead_list(scope, DeadFilters(cursor=dead_two)),
         "oqron_jobs_dlq_all_died_idx", "oqron_jobs_dlq_all_died_idx", True),
        ("dead letters of a queue", lambda: dead_list(scope, DeadFilters(queue="p", died_before=now_ms())),
         "oqron_jobs_dlq_died_idx", "oqron_jobs_dlq_died_idx", True),
        ("an error group", lambda: dead_list(scope, DeadFilters(fingerprint=dead_job("x", "y", message="error kind 3")
                                                               .error_fingerprint)),
         "oqron_jobs_dlq_fingerprint_idx", "oqron_jobs_dlq_fingerprint_idx", True),
        # A text search reads the newest dead letters in the list's order (oqronboard.jobs.search);
        # SQLite then sorts the matches of that window (at most SEARCH_WINDOW rows).
        ("a text search among the newest", lambda: dead_list(scope, DeadFilters(search="kind 3")),
         "oqron_jobs_dlq_all_died_idx", "oqron_jobs_dlq_all_died_idx", "postgres"),
        ("a text search in a queue", lambda: dead_list(scope, DeadFilters(queue="p", search="kind")),
         "oqron_jobs_dlq_died_idx", "oqron_jobs_dlq_died_idx", "postgres"),
        ("dead-letter depth", lambda: dlq_depths(scope), "oqron_jobs_dead_kind_idx", "oqron_jobs_kind_idx", False),
        ("error groups", lambda: dead_groups(scope), "oqron_jobs_", "oqron_jobs_dlq_fingerprint_idx", False),
        ("audit", lambda: audit_entries(scope, AUDIT), "oqron_records_pkey",
         "sqlite_autoindex_oqron_records_1", True),
        ("queue controls", lambda: queue_controls(scope), "oqron_records_pkey", "sqlite_autoindex_oqron_records_1",
         True),
        ("definitions", lambda: definitions(scope), "oqron_records_kind_idx", "oqron_records_kind_idx", False),
        ("queues and their oldest waiting job", lambda: queue_states(scope), "oqron_jobs_status_created_idx",
         "oqron_jobs_status_created_idx", False),
        # Any index leading with (project, environment, namespace) serves the skip scan; which
        # one the planner takes depends on its statistics of the moment (both seen in CI runs).
        ("queues holding jobs (a skip scan)", lambda: job_queues(scope),
         ("oqron_jobs_pkey", "oqron_jobs_status_created_idx"),
         ("sqlite_autoindex_oqron_jobs_1", "oqron_jobs_status_created_idx"), False),
    ]


@pytest.mark.slow
def test_the_main_queries_use_an_index(shared_db: SharedDatabase):
    seed(shared_db)
    scope = BoardScope(shared_db.project, shared_db.environment)
    problems = []
    for label, query, pg_index, sqlite_index, ordered in cases(scope):
        texts = plans(shared_db, query)
        assert texts, label
        plan = "\n".join(texts)
        expected = sqlite_index if shared_db.alias == "default" else pg_index
        if not any(name in plan for name in ((expected,) if isinstance(expected, str) else expected)):
            problems.append(f"{label}: expected {expected}\n{plan}")
        if shared_db.alias == "default":
            if "SCAN oqron_" in plan or (ordered is True and "TEMP B-TREE FOR ORDER BY" in plan):
                problems.append(f"{label}: scans or sorts\n{plan}")
        elif "Seq Scan" in plan or (ordered and "Sort" in plan):
            problems.append(f"{label}: scans or sorts\n{plan}")
    assert not problems, "\n\n".join(problems)
