"""Behaviours fixed after the screenshot review and the page-timing bench: run detail of
finished and running runs, links to jobs that left their queue, the queue page's first
tab, dead job facts, internal queues on the overview, bounded run search, the login
page's footer and the error groups' single statement."""

from __future__ import annotations

import re

from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from jobs.queries import dead_groups
from oqronkit.backends.hot_types import Signal
from oqronkit.clock import now_ms
from tests.board.seed import (
    MINUTE,
    Board,
    dead_job,
    error,
    job_value,
    put_jobs,
    put_runs,
    queue_control,
    run_value,
)


def test_a_finished_run_shows_its_final_state_not_a_reload_hint(board: Board):
    put_runs(board.plane, [
        run_value("r-failed", status="failed", error=error("boom"), job_id="gone-job", progress=40),
        run_value("r-done", status="completed", output={"ok": True}),
    ])
    failed = board.viewer.get(reverse("run", args=["r-failed"])).content.decode()
    assert 'data-testid="run-ended"' not in failed and "Reload" not in failed
    assert 'data-testid="run-final"' in failed and "at 40.0%" in failed
    done = board.viewer.get(reverse("run", args=["r-done"])).content.decode()
    assert 'data-testid="run-final"' in done and 'value="100.0"' in done
    # The live poll still says the run just ended (and stops polling).
    live = board.viewer.get(reverse("run-live", args=["r-failed"]), HTTP_HX_REQUEST="true")
    assert live.status_code == 286 and 'data-testid="run-ended"' in live.content.decode()


def test_a_run_of_a_job_that_left_its_queue_does_not_link_to_it(board: Board):
    put_jobs(board.plane, [job_value("emails", "still-here")])
    put_runs(board.plane, [
        run_value("r-gone", status="completed", job_id="gone-job"),
        run_value("r-here", status="failed", error=error(), job_id="still-here"),
    ])
    gone = board.viewer.get(reverse("run", args=["r-gone"])).content.decode()
    assert 'data-testid="run-job-link"' not in gone and "/jobs/emails/gone-job/" not in gone
    assert 'data-testid="run-job-id"' in gone and "has left the queue" in gone
    here = board.viewer.get(reverse("run", args=["r-here"])).content.decode()
    assert 'data-testid="run-job-link"' in here and "/jobs/emails/still-here/" in here


def test_a_running_run_shows_elapsed_time_no_null_output_and_its_logs_once(board: Board):
    put_runs(board.plane, [run_value("r-run", status="running", started=now_ms() - 2 * MINUTE, progress=30,
                                     logs=[("info", "step one")])])
    body = board.viewer.get(reverse("run", args=["r-run"])).content.decode()
    duration = body.split('data-testid="run-duration">')[1].split("</dd>")[0]
    assert "so far" in duration and re.search(r"\d+m \d\ds", duration)
    output = body.split('data-testid="run-output"')[1].split("</")[0]
    assert "null" not in output and "Not yet" in output
    assert body.count("step one") == 1 and 'data-testid="run-logs"' not in body


def test_the_queue_page_opens_the_first_tab_with_jobs(board: Board):
    now = now_ms()
    queue_control(board.plane, "emails")
    put_jobs(board.plane, [job_value("emails", "d-1", status="delayed", created=now, run_at=now + 60 * MINUTE)])
    board.scope.engine.hot.signal("emails", [Signal("d-1", run_at=now + 60 * MINUTE)], now)
    body = board.viewer.get(reverse("queue-jobs", args=["emails"])).content.decode()
    assert re.search(r'data-testid="tab-delayed" aria-current="page"', body)
    assert 'href="/jobs/emails/d-1/"' in body
    # A chosen tab stays chosen, even when empty; an empty queue opens on waiting.
    waiting = board.viewer.get(reverse("queue-jobs", args=["emails"]), {"status": "waiting"}).content.decode()
    assert re.search(r'data-testid="tab-waiting" aria-current="page"', waiting)
    empty = board.viewer.get(reverse("queue-jobs", args=["sms"])).content.decode()
    assert re.search(r'data-testid="tab-waiting" aria-current="page"', empty)


def test_a_dead_job_has_no_due_time_and_a_last_run(board: Board):
    job = dead_job("emails", "dead-1")
    job.run_at = now_ms() - 8000
    job.run_id = "r-last"
    put_jobs(board.plane, [job])
    body = board.viewer.get(reverse("job", args=["emails", "dead-1"])).content.decode()
    assert "<dt>Due</dt>" not in body
    assert "<dt>Last run</dt>" in body and "Current run" not in body


def test_the_overview_hides_internal_queues(board: Board, settings):
    settings.OQRON_INTERNAL_QUEUES = ["demo-ticker"]
    queue_control(board.plane, "emails")
    queue_control(board.plane, "demo-ticker")
    body = board.viewer.get(reverse("home")).content.decode()
    assert 'data-testid="queue-row-emails"' in body
    assert 'data-testid="queue-row-demo-ticker"' not in body and 'data-testid="hidden-queues"' in body
    # The Jobs page still lists it.
    assert "/jobs/demo-ticker/" in board.viewer.get(reverse("queues")).content.decode()


def test_a_search_without_a_status_looks_in_failed_runs_and_says_so(board: Board):
    put_runs(board.plane, [
        run_value("r-fail", status="failed", error=error("disk full")),
        run_value("r-cancel", status="cancelled", error=error("disk full, cancelled")),
    ])
    body = board.viewer.get(reverse("runs"), {"q": "disk"}).content.decode()
    assert 'data-run-id="r-fail"' in body and 'data-run-id="r-cancel"' not in body
    assert 'data-testid="search-scope"' in body
    chosen = board.viewer.get(reverse("runs"), {"q": "disk", "status": "cancelled"}).content.decode()
    assert 'data-run-id="r-cancel"' in chosen and 'data-testid="search-scope"' not in chosen


def test_run_lists_keep_the_start_time_and_worker_on_one_line(board: Board):
    put_runs(board.plane, [run_value("r-1", worker="vm-12345-abcdefabcdefabcdef-long-worker-id")])
    body = board.viewer.get(reverse("runs")).content.decode()
    row = body.split('data-run-id="r-1"')[1].split("</tr>")[0]
    assert '<td class="nowrap">' in row and 'title="vm-12345-abcdefabcdefabcdef-long-worker-id"' in row
    assert " UTC</time>" not in row  # the short form; the full time is the title


def test_the_login_page_has_no_keyboard_footer(board: Board):
    from django.test import Client

    body = Client().get(reverse("login")).content.decode()
    assert "Keys:" not in body
    assert "Keys:" in board.viewer.get(reverse("home")).content.decode()


def test_error_groups_are_one_statement_with_counts_and_the_latest_error(board: Board):
    now = now_ms()
    put_jobs(board.plane, [
        dead_job("emails", "a", message="user 1 not found", died=now - 3 * MINUTE),
        dead_job("sms", "b", message="user 2 not found", died=now - MINUTE),
        dead_job("emails", "c", message="SMTP down", kind="ConnectionError", died=now - 2 * MINUTE),
    ])
    with CaptureQueriesContext(connections[board.db.alias]) as captured:
        groups = dead_groups(board.scope)
    assert len([q for q in captured.captured_queries if "oqron_jobs" in q["sql"]]) == 1
    assert [(g["count"], g["queues"], g["error_type"]) for g in groups] == [(2, 2, "ValueError"),
                                                                            (1, 1, "ConnectionError")]
    lookup = groups[0]
    assert lookup["first"] == now - 3 * MINUTE and lookup["last"] == now - MINUTE
    assert lookup["message"] == "user 2 not found"  # the latest failure's message
    in_sms = dead_groups(board.scope, queue="sms")
    assert [(g["count"], g["queue"]) for g in in_sms] == [(1, "sms")]
