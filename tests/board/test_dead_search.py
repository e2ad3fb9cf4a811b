"""The dead letters' text search among the newest ones (oqronboard.jobs.search): one
statement when the window fills the page, LIKE's wildcards taken literally, and the
window counted from the page's cursor and within the filters."""

from __future__ import annotations

from django.db import connections
from django.test.utils import CaptureQueriesContext

from oqronboard.jobs.queries import DeadFilters, dead_list
from oqronboard.jobs.search import newest_matches
from oqronkit.clock import now_ms
from tests.board.seed import Board, dead_job, put_jobs


def test_a_page_the_window_fills_is_one_statement(board: Board):
    now = now_ms()
    put_jobs(board.plane, [dead_job("emails", f"d{i:02d}", died=now - i, message=f"card declined {i}")
                           for i in range(30)])
    with CaptureQueriesContext(connections[board.db.alias]) as captured:
        rows, cursor = dead_list(board.scope, DeadFilters(search="DECLINED"), limit=10)
    assert len([q for q in captured.captured_queries if "oqron_jobs" in q["sql"]]) == 1
    assert [r["id"] for r in rows] == [f"d{i:02d}" for i in range(10)] and cursor is not None
    assert rows[0]["died"] == now and rows[0]["error_message"] == "card declined 0" and rows[0]["queue"] == "emails"


def test_wildcards_are_literal_and_the_filters_bound_the_window(board: Board):
    now = now_ms()
    put_jobs(board.plane, [
        dead_job("emails", "pct", died=now - 1, message="disk 100% full"),
        dead_job("emails", "num", died=now - 2, message="disk 1000 full"),
        dead_job("sms", "under", died=now - 3, message="key a_b missing"),
        dead_job("sms", "plain", died=now - 4, message="key axb missing"),
    ])

    def ids(search: str, wanted: int, **filters) -> list[str] | None:
        rows = newest_matches(board.scope, search=search, wanted=wanted, db=board.db.alias, **filters)
        return None if rows is None else [r["id"] for r in rows]

    assert ids("100%", 1) == ["pct"] and ids("100%", 2) is None  # one match: the caller asks the index
    assert ids("A_B", 1) == ["under"]
    assert ids("disk", 2) == ["pct", "num"] and ids("key", 2, queue="emails") is None
    assert ids("key", 1, cursor=(now - 3, "under")) == ["plain"]
    assert ids("disk", 1, died_before=now - 2) == ["num"]
