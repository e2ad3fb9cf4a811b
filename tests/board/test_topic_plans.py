"""The topic pages' queries use an index (see tests/board/test_plans.py for how plans
are read): the topics page's three queries, a topic's log newest first (the spec's
fifth dashboard query), a message and its deliveries.

A topic's log is ordered by ``(value->>'publishedAt')::numeric`` as the spec writes it;
on Postgres ``oqron_runs_message_published_idx`` serves that order, and ties on
publishedAt (messages of one batch share a millisecond) are broken by id with at most
an incremental sort within equal keys. SQLite has no publishedAt index: it reads the
topic's rows through an index and sorts them.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.db import connections

from oqronboard import topics
from oqronboard.base.cursors import decode_cursor
from oqronboard.base.scope import BoardScope
from oqronboard.runs.topics import MessageFilters, delivery_runs, get_message, message_page
from oqronkit import Topic
from oqronkit.clock import now_ms
from oqronkit.topics import groups
from tests.board.conftest import SharedDatabase
from tests.board.seed import put_runs, run_value
from tests.board.test_plans import plans

# SQLite reads a topic's rows by (project, environment, kind, namespace) or its key.
LOG_SQLITE = ("oqron_runs_kind_idx", "sqlite_autoindex_oqron_runs_1")
# A plan node sorting every row it reads (an incremental sort within equal keys is fine).
FULL_SORT = re.compile(r"(?m)(?:^|->)\s*Sort  \(cost")


def seed(db: SharedDatabase) -> tuple[BoardScope, list[str]]:
    scope = BoardScope(db.project, db.environment)
    ids: list[str] = []
    for name in ("orders", "payments", "audit"):
        topic = Topic(name, partitions=3, engine=scope.engine)
        for start in range(0, 1500, 500):
            ids += topic.publish_many([{"payload": {"n": n}, "key": f"k{n % 17}", "correlation_id": f"c{n % 5}"}
                                       for n in range(start, start + 500)])
        groups.ensure(db.plane, name, "billing", 3, "earliest")
    put_runs(db.plane, [run_value(f"r{i:05d}", job_id=f"j{i % 300}", started=now_ms() - i * 1000)
                        for i in range(2000)])
    with connections[db.alias].cursor() as cursor:
        cursor.execute("ANALYZE" if db.alias == "default" else "ANALYZE oqron_runs")
        if db.alias != "default":
            cursor.execute("ANALYZE oqron_records")
            cursor.execute("ANALYZE oqron_jobs")
    return scope, ids


Case = tuple[str, Callable[[], object], tuple[str, ...], str | tuple[str, ...], bool]


def cases(scope: BoardScope, ids: list[str]) -> list[Case]:
    """(label, query, Postgres indexes (all expected), SQLite index (or any of them), is a newest-first list)."""
    page = message_page(scope, "orders", MessageFilters())
    second = decode_cursor(page[1]) if page[1] else None
    return [
        ("topics page", lambda: topics.build(scope),
         ("oqron_records_pkey", "oqron_runs_log_offset_idx", "oqron_runs_message_published_idx", "oqron_jobs_"),
         "oqron_runs_log_offset_idx", False),
        ("one topic", lambda: topics.build(scope, topic="orders"),
         ("oqron_records_pkey", "oqron_runs_log_offset_idx"), "oqron_runs_log_offset_idx", False),
        ("the log, newest first", lambda: message_page(scope, "orders", MessageFilters()),
         ("oqron_runs_message_published_idx",), LOG_SQLITE, True),
        ("the log, page two", lambda: message_page(scope, "orders", MessageFilters(cursor=second)),
         ("oqron_runs_message_published_idx",), LOG_SQLITE, True),
        ("the log in a window", lambda: message_page(scope, "orders", MessageFilters(since=now_ms() - 60_000)),
         ("oqron_runs_message_published_idx",), LOG_SQLITE, True),
        # No key index: the planner walks the publishedAt index and filters, or (a rare
        # key) reads the topic's rows by kind and sorts the few that match.
        ("the log by key", lambda: message_page(scope, "orders", MessageFilters(key="k3")),
         ("oqron_runs_",), LOG_SQLITE, False),
        # One row by key: the primary key or the id index (the spec's "a run by id") cost the same.
        ("a message", lambda: get_message(scope, "orders", ids[7]), ("oqron_runs_pkey|oqron_runs_id_idx",),
         "sqlite_autoindex_oqron_runs_1", False),
        ("its deliveries", lambda: delivery_runs(scope, "orders", ids[7]), ("oqron_runs_job_idx",),
         "oqron_runs_job_idx", False),
    ]


@pytest.mark.slow
def test_the_topic_queries_use_an_index(shared_db: SharedDatabase):
    scope, ids = seed(shared_db)
    problems = []
    postgres = shared_db.alias != "default"
    for label, query, pg_indexes, sqlite_index, ordered in cases(scope, ids):
        plan = "\n".join(plans(shared_db, query))
        if postgres:
            missing = [name for name in pg_indexes if not any(alt in plan for alt in name.split("|"))]
        else:
            choices = (sqlite_index,) if isinstance(sqlite_index, str) else sqlite_index
            missing = [] if any(name in plan for name in choices) else list(choices)
        if missing:
            problems.append(f"{label}: expected {missing}\n{plan}")
        if postgres and ("Seq Scan" in plan or (ordered and FULL_SORT.search(plan))):
            problems.append(f"{label}: scans or sorts\n{plan}")
        if not postgres and re.search(r"SCAN oqron_\w+(?! USING)", plan):
            problems.append(f"{label}: scans\n{plan}")
    assert not problems, "\n\n".join(problems)
