"""Each live fragment costs at most three queries on the durable tables (the overview
four: the fourth finds queues no worker has recorded yet), and no count over run
history is unbounded."""

from __future__ import annotations

from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.board.seed import Board, dead_job, job_value, put_jobs, put_runs, queue_control, run_value

FRAGMENTS = [
    ("home", [], {"panel": "live"}, 4),
    ("dead-letters", [], {"panel": "depth"}, 1),
    ("dead-letters", [], {"panel": "groups"}, 1),
    ("dead-letters", [], {"panel": "list"}, 1),
    ("definitions", [], {"panel": "list"}, 1),
    ("queue-jobs", ["emails"], {"panel": "counts"}, 2),
    ("run-live", ["running"], {}, 1),
]


def durable_queries(board: Board, name: str, args: list, params: dict) -> list[str]:
    with CaptureQueriesContext(connections[board.db.alias]) as captured:
        response = board.viewer.get(reverse(f"oqronboard:{name}", args=args), params, HTTP_HX_REQUEST="true")
    assert response.status_code in (200, 286), name
    return [q["sql"] for q in captured.captured_queries if "oqron_" in q["sql"]]


def test_every_live_fragment_costs_at_most_three_queries(board: Board):
    queue_control(board.plane, "emails")
    put_jobs(board.plane, [job_value("emails", "w1"), dead_job("emails", "d1")])
    put_runs(board.plane, [run_value("running", status="running"), run_value("done")])
    for name, args, params, budget in FRAGMENTS:
        queries = durable_queries(board, name, args, params)
        assert len(queries) <= budget, (name, params, queries)
        for query in queries:
            if "COUNT(" in query and "oqron_runs" in query:  # counts over run history are windowed
                assert "startedAt" in query and ">=" in query, (name, query)
