"""The webhook pages' queries use an index (see tests/board/test_plans.py for how plans
are read): the webhooks page's three queries, the delivery log newest first (every
webhook's on the module index, one webhook's on the name index), its pages and
filters, and a delivery's attempts (the jobId index)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.db import connections

from oqronboard import webhooks
from oqronboard.base.cursors import decode_cursor
from oqronboard.base.scope import BoardScope
from oqronboard.runs.webhooks import AttemptFilters, attempt_page, delivery_attempts, matching_deliveries
from oqronkit import RecordWrite
from oqronkit.clock import now_ms
from oqronkit.queues.runs import finish_run, new_run
from tests.board.conftest import SharedDatabase
from tests.board.seed import put_runs, run_value
from tests.board.test_plans import plans
from tests.board.webhook_seed import declare

FULL_SORT = re.compile(r"(?m)(?:^|->)\s*Sort  \(cost")
DAY = 86_400_000


def seed(db: SharedDatabase) -> BoardScope:
    scope = BoardScope(db.project, db.environment)

    class _Board:  # what declare() reads of a board
        pass

    board = _Board()
    board.scope = scope  # type: ignore[attr-defined]
    for name in ("billing", "shipping", "crm"):
        declare(board, name)  # type: ignore[arg-type]
    now = now_ms()
    writes = []
    for i in range(6000):
        hook, endpoint = ("billing", "shipping", "crm")[i % 3], ("shop", "crm")[i % 2]
        run = new_run(name=f"webhook/{hook}", module="webhook", trigger="webhook", input={"n": i}, attempts=1,
                      app="t", environment="t", worker_id="w", job_id=f"m{i // 2}@{endpoint}",
                      started_at=now - i * 1000,
                      extra={"webhook": hook, "event": f"order.e{i % 7}", "endpointId": endpoint,
                             "messageId": f"m{i // 2}", "request": None, "response": {"status": 200, "durationMs": 9}})
        finish_run(run, "failed" if i % 11 == 0 else "completed", at=now - i * 1000 + 9)
        writes.append(RecordWrite("runs", run["id"], dict(run)))
    db.plane.put_many(writes)
    # Queue runs: the bulk of a real run table, which the webhook queries must not read.
    put_runs(db.plane, [run_value(f"r{i:05d}", job_id=f"j{i % 300}", started=now - i * 500) for i in range(6000)])
    with connections[db.alias].cursor() as cursor:
        cursor.execute("ANALYZE" if db.alias == "default" else "ANALYZE oqron_runs")
        if db.alias != "default":
            cursor.execute("ANALYZE oqron_records")
            cursor.execute("ANALYZE oqron_jobs")
    return scope


Case = tuple[str, Callable[[], object], tuple[str, ...], str | tuple[str, ...], bool]


def cases(scope: BoardScope) -> list[Case]:
    """(label, query, Postgres indexes (all expected; a|b either), SQLite index (or any), is a newest-first list)."""
    since = now_ms() - DAY
    page = attempt_page(scope, AttemptFilters(since=since))
    second = decode_cursor(page[1]) if page[1] else None
    one = attempt_page(scope, AttemptFilters(since=since, webhook="billing"))
    one_second = decode_cursor(one[1]) if one[1] else None
    module = "oqron_runs_other_module_started_f8_idx"
    name = "oqron_runs_run_name_started_f8_idx"
    return [
        ("webhooks page", lambda: webhooks.build(scope), ("oqron_records_pkey", module, "oqron_jobs_"),
         "oqron_runs_module_idx", False),
        ("the log, newest first", lambda: attempt_page(scope, AttemptFilters(since=since)), (module,),
         "oqron_runs_module_idx", True),
        ("the log, page two", lambda: attempt_page(scope, AttemptFilters(since=since, cursor=second)), (module,),
         "oqron_runs_module_idx", True),
        ("one webhook's log", lambda: attempt_page(scope, AttemptFilters(since=since, webhook="billing")),
         (f"{name}|{module}",), ("oqron_runs_name_idx", "oqron_runs_module_idx"), True),
        ("one webhook's log, page two",
         lambda: attempt_page(scope, AttemptFilters(since=since, webhook="billing", cursor=one_second)),
         (f"{name}|{module}",), ("oqron_runs_name_idx", "oqron_runs_module_idx"), True),
        ("by endpoint, event and status",
         lambda: attempt_page(scope, AttemptFilters(since=since, endpoint="crm", event="order.e3", status="failed")),
         ("oqron_runs_",), ("oqron_runs_module_idx", "oqron_runs_status_idx"), False),
        ("resend all matching", lambda: matching_deliveries(scope, AttemptFilters(since=since, status="failed"),
                                                            limit=1000),
         ("oqron_runs_",), ("oqron_runs_module_idx", "oqron_runs_status_idx"), False),
        ("a delivery's attempts", lambda: delivery_attempts(scope, "billing", "m3@shop"), ("oqron_runs_job_idx",),
         "oqron_runs_job_idx", False),
    ]


@pytest.mark.slow
def test_the_webhook_queries_use_an_index(shared_db: SharedDatabase):
    scope = seed(shared_db)
    problems = []
    postgres = shared_db.alias != "default"
    for label, query, pg_indexes, sqlite_index, ordered in cases(scope):
        plan = "\n".join(plans(shared_db, query))
        if postgres:
            missing = [n for n in pg_indexes if not any(alt in plan for alt in n.split("|"))]
        else:
            choices = (sqlite_index,) if isinstance(sqlite_index, str) else sqlite_index
            missing = [] if any(n in plan for n in choices) else list(choices)
        if missing:
            problems.append(f"{label}: expected {missing}\n{plan}")
        if postgres and ("Seq Scan" in plan or (ordered and FULL_SORT.search(plan))):
            problems.append(f"{label}: scans or sorts\n{plan}")
        if not postgres and (re.search(r"SCAN oqron_\w+(?! USING)", plan)
                             or (ordered and "TEMP B-TREE FOR ORDER BY" in plan)):
            problems.append(f"{label}: scans or sorts\n{plan}")
    assert not problems, "\n\n".join(problems)
