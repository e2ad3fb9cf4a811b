"""Runs, failed runs and run detail, on SQLite and Postgres."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from django.urls import reverse

from oqronkit.clock import now_ms
from oqronkit.live import publish_runs
from tests.board.seed import MINUTE, Board, dead_job, error, job_value, put_jobs, put_runs, run_value

HOUR = 60 * MINUTE


def run_ids(body: str) -> list[str]:
    return re.findall(r'data-run-id="([^"]+)"', body)


def seed_mixed(board: Board) -> None:
    now = now_ms()
    put_runs(board.plane, [
        run_value("r-ok", started=now - 1 * MINUTE, worker="w-a", job_id="j1"),
        run_value("r-fail", status="failed", started=now - 2 * MINUTE, error=error("user 42 not found"),
                  worker="w-b", job_id="j2"),
        run_value("r-cron", name="nightly", module="cron", started=now - 3 * MINUTE, worker="w-a"),
        run_value("r-smtp", status="failed", started=now - 4 * MINUTE, error=error("SMTP refused", "ConnectionError"),
                  name="mailer"),
        run_value("r-old", status="failed", started=now - 30 * HOUR, error=error("ancient")),
    ])
    board.plane.put("topic_msg:orders", "m1", {"publishedAt": now})  # same table, never a run


def test_runs_newest_first_within_24_hours(board: Board):
    seed_mixed(board)
    body = board.viewer.get(reverse("oqronboard:runs")).content.decode()
    assert run_ids(body) == ["r-ok", "r-fail", "r-cron", "r-smtp"]
    assert 'data-testid="runs-table"' in body and 'aria-current="page"' in body
    wider = board.viewer.get(reverse("oqronboard:runs"), {"window": "7d"}).content.decode()
    assert run_ids(wider)[-1] == "r-old"


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"status": "failed"}, ["r-fail", "r-smtp"]),
        ({"name": "nightly"}, ["r-cron"]),
        ({"module": "cron"}, ["r-cron"]),
        ({"worker": "w-a"}, ["r-ok", "r-cron"]),
        ({"job": "j2"}, ["r-fail"]),
        ({"q": "smtp"}, ["r-smtp"]),
        ({"q": "USER 42"}, ["r-fail"]),
        ({"status": "failed", "name": "mailer"}, ["r-smtp"]),
        ({"status": "failed", "window": "30d", "q": "ancient"}, ["r-old"]),
    ],
)
def test_every_filter_is_a_bookmarkable_get_parameter(board: Board, params, expected):
    seed_mixed(board)
    response = board.viewer.get(reverse("oqronboard:runs"), params)
    assert response.status_code == 200
    assert run_ids(response.content.decode()) == expected


def test_failed_runs_page(board: Board):
    seed_mixed(board)
    body = board.viewer.get(reverse("oqronboard:failed-runs")).content.decode()
    assert run_ids(body) == ["r-fail", "r-smtp"]
    assert body.count('data-testid="failed-run-row"') == 2
    assert "user 42 not found" in body and "ConnectionError" in body
    assert 'id="nav-failed"' in body
    # The failed page ignores a status parameter: it always lists failures.
    assert run_ids(board.viewer.get(reverse("oqronboard:failed-runs"), {"status": "completed"}).content.decode()) == \
        ["r-fail", "r-smtp"]


@pytest.mark.parametrize(
    "params",
    [{"status": "exploded"}, {"window": "99y"}, {"module": "nope"}, {"cursor": "!!not-a-cursor"},
     {"cursor": "WyJ4Il0"}, {"name": "x" * 101}, {"q": "a\x00b"}, {"worker": "w" * 201}],
    ids=["status", "window", "module", "cursor", "cursor-shape", "name-length", "nul", "worker-length"],
)
def test_bad_filter_values_answer_400_with_a_message(board: Board, params):
    for url in (reverse("oqronboard:runs"), reverse("oqronboard:failed-runs")):
        response = board.viewer.get(url, params)
        assert response.status_code == 400, (url, params)
        body = response.content.decode()
        assert 'data-testid="bad-request"' in body and "Bad" in body


def test_keyset_pages_walk_every_run_once(board: Board):
    now = now_ms()
    # 120 runs, some sharing a start time, so the id breaks ties.
    put_runs(board.plane, [run_value(f"run-{i:03d}", started=now - (i // 3) * 1000) for i in range(120)])
    seen: list[str] = []
    url, params = reverse("oqronboard:runs"), {}
    for _page in range(5):
        body = board.viewer.get(url, params).content.decode()
        seen += run_ids(body)
        more = re.search(r'data-testid="load-more"', body)
        if not more:
            break
        query = re.search(r'href="\?([^"]+)" hx-get', body).group(1).replace("&amp;", "&")
        params = {k: v[0] for k, v in parse_qs(query).items()}
    # Newest start first; equal starts by id, descending: each page starts where the last ended.
    assert seen == [f"run-{3 * group + k:03d}" for group in range(40) for k in (2, 1, 0)]


def test_load_more_answers_htmx_with_rows_only(board: Board):
    now = now_ms()
    put_runs(board.plane, [run_value(f"run-{i:03d}", started=now - i * 1000) for i in range(60)])
    first = board.viewer.get(reverse("oqronboard:runs")).content.decode()
    query = re.search(r'href="\?([^"]+)" hx-get', first).group(1).replace("&amp;", "&")
    response = board.viewer.get(reverse("oqronboard:runs") + "?" + query, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert "<html" not in body and "<tr" in body
    assert run_ids(body) == [f"run-{i:03d}" for i in range(50, 60)]
    assert "load-more" not in body


def test_run_detail_shows_the_whole_story(board: Board):
    now = now_ms()
    put_jobs(board.plane, [dead_job("emails", "j1", message="timeout talking to smtp")])
    put_runs(board.plane, [
        run_value("a1", status="failed", job_id="j1", attempts=1, started=now - 3 * MINUTE, error=error("first")),
        run_value("a2", status="failed", job_id="j1", attempts=2, started=now - 2 * MINUTE, input={"to": "x@y.z"},
                  error=error("second"), logs=[("info", "connecting"), ("error", "gave up")]),
        run_value("other", job_id="j9", started=now - MINUTE),
    ])
    response = board.viewer.get(reverse("oqronboard:run", args=["a2"]))
    assert response.status_code == 200
    body = response.content.decode()
    for text in ("x@y.z", "second", "Traceback (most recent call last)", "connecting", "gave up", "worker-1",
                 'data-testid="run-timeline"', "waiting", "attempt 2", "1.5 s", "the job is dead"):
        assert text in body, text
    # Every run of the job side by side, this one marked; another job's run is not there.
    attempts = re.search(r'data-testid="job-runs">(.*?)</section>', body, re.S).group(1)
    assert "/runs/a1/" in attempts and "/runs/a2/" in attempts and "/runs/other/" not in attempts
    assert 'class="attempt current" href="/runs/a2/"' in attempts
    assert 'href="/jobs/emails/j1/"' in body
    assert 'data-poll' not in body.split('id="run-live"')[1].split(">")[0]  # an ended run does not poll


def test_unknown_run_is_404(board: Board):
    assert board.viewer.get(reverse("oqronboard:run", args=["missing"])).status_code == 404
    assert board.viewer.get(reverse("oqronboard:run-live", args=["missing"])).status_code == 404


def test_a_running_run_polls_its_live_panel_until_it_ends(board: Board):
    put_runs(board.plane, [run_value("live-1", status="running", progress=10.0)])
    page = board.viewer.get(reverse("oqronboard:run", args=["live-1"])).content.decode()
    panel = page.split('id="run-live"')[1].split(">")[0]
    assert "data-poll" in panel and 'hx-get="/runs/live-1/live/"' in panel and "every 5s" in panel
    assert 'hx-sync="this:drop"' in panel
    assert 'data-testid="progress"' in page and 'aria-valuenow="10.0"' in page

    # The worker's hot overlay is fresher than the durable record.
    publish_runs(board.scope.engine.hot, [{
        "id": "live-1", "status": "running", "progressPercent": 62.5, "progressLabel": "step 5 of 8",
        "logs": [{"level": "info", "msg": "halfway", "ts": now_ms()}]}], ttl_ms=60_000)
    live = board.viewer.get(reverse("oqronboard:run-live", args=["live-1"]), HTTP_HX_REQUEST="true")
    assert live.status_code == 200
    body = live.content.decode()
    assert "<html" not in body
    assert 'aria-valuenow="62.5"' in body and "step 5 of 8" in body and "halfway" in body

    put_runs(board.plane, [run_value("live-1", status="completed")])
    ended = board.viewer.get(reverse("oqronboard:run-live", args=["live-1"]), HTTP_HX_REQUEST="true")
    assert ended.status_code == 286  # htmx stops polling
    assert 'data-testid="run-ended"' in ended.content.decode() and 'aria-valuenow="100.0"' in ended.content.decode()


def test_a_run_without_a_job(board: Board):
    put_runs(board.plane, [run_value("cron-1", name="nightly", module="cron")])
    body = board.viewer.get(reverse("oqronboard:run", args=["cron-1"])).content.decode()
    assert "nightly" in body and "All runs of this job" not in body


def test_the_jump_box_finds_runs_and_jobs(board: Board):
    put_runs(board.plane, [run_value("r-1")])
    board.plane.put("queue", "emails", {"name": "emails", "paused": False})
    put_jobs(board.plane, [dead_job("emails", "job-7")])
    assert board.viewer.get(reverse("oqronboard:jump"), {"id": "r-1"})["Location"] == "/runs/r-1/"
    assert board.viewer.get(reverse("oqronboard:jump"), {"id": "job-7"})["Location"] == "/jobs/emails/job-7/"
    missing = board.viewer.get(reverse("oqronboard:jump"), {"id": "nope"})
    assert missing.status_code == 404 and b"No run or job" in missing.content
    assert board.viewer.get(reverse("oqronboard:jump"), {"id": "x" * 300}).status_code == 400


def test_job_ids_with_slashes_link_and_resolve(board: Board):
    board.plane.put("queue", "emails", {"name": "emails", "paused": False})
    put_jobs(board.plane, [dead_job("emails", "order/42")])
    body = board.operator.get(reverse("oqronboard:dead-letters")).content.decode()
    detail = reverse("oqronboard:job", args=["emails", "order/42"])
    assert detail == "/jobs/emails/~b3JkZXIvNDI/"  # escaped: WSGI would decode a %2F before routing
    assert f'href="{detail}"' in body
    assert board.viewer.get(detail).status_code == 200
    assert urlparse(reverse("oqronboard:job-action", args=["emails", "order/42", "retry"])).path == detail + "retry/"


def test_a_finished_run_shows_its_final_state_not_a_reload_hint(board: Board):
    put_runs(board.plane, [
        run_value("r-failed", status="failed", error=error("boom"), job_id="gone-job", progress=40),
        run_value("r-done", status="completed", output={"ok": True}),
    ])
    failed = board.viewer.get(reverse("oqronboard:run", args=["r-failed"])).content.decode()
    assert 'data-testid="run-ended"' not in failed and "Reload" not in failed
    assert 'data-testid="run-final"' in failed and "at 40.0%" in failed
    done = board.viewer.get(reverse("oqronboard:run", args=["r-done"])).content.decode()
    assert 'data-testid="run-final"' in done and 'value="100.0"' in done
    # The live poll still says the run just ended (and stops polling).
    live = board.viewer.get(reverse("oqronboard:run-live", args=["r-failed"]), HTTP_HX_REQUEST="true")
    assert live.status_code == 286 and 'data-testid="run-ended"' in live.content.decode()


def test_a_run_of_a_job_that_left_its_queue_does_not_link_to_it(board: Board):
    put_jobs(board.plane, [job_value("emails", "still-here")])
    put_runs(board.plane, [
        run_value("r-gone", status="completed", job_id="gone-job"),
        run_value("r-here", status="failed", error=error(), job_id="still-here"),
    ])
    gone = board.viewer.get(reverse("oqronboard:run", args=["r-gone"])).content.decode()
    assert 'data-testid="run-job-link"' not in gone and "/jobs/emails/gone-job/" not in gone
    assert 'data-testid="run-job-id"' in gone and "has left the queue" in gone
    here = board.viewer.get(reverse("oqronboard:run", args=["r-here"])).content.decode()
    assert 'data-testid="run-job-link"' in here and "/jobs/emails/still-here/" in here


def test_a_running_run_shows_elapsed_time_no_null_output_and_its_logs_once(board: Board):
    put_runs(board.plane, [run_value("r-run", status="running", started=now_ms() - 2 * MINUTE, progress=30,
                                     logs=[("info", "step one")])])
    body = board.viewer.get(reverse("oqronboard:run", args=["r-run"])).content.decode()
    duration = body.split('data-testid="run-duration">')[1].split("</dd>")[0]
    assert "so far" in duration and re.search(r"\d+m \d\ds", duration)
    output = body.split('data-testid="run-output"')[1].split("</")[0]
    assert "null" not in output and "Not yet" in output
    assert body.count("step one") == 1 and 'data-testid="run-logs"' not in body


def test_a_search_without_a_status_looks_in_failed_runs_and_says_so(board: Board):
    put_runs(board.plane, [
        run_value("r-fail", status="failed", error=error("disk full")),
        run_value("r-cancel", status="cancelled", error=error("disk full, cancelled")),
    ])
    body = board.viewer.get(reverse("oqronboard:runs"), {"q": "disk"}).content.decode()
    assert 'data-run-id="r-fail"' in body and 'data-run-id="r-cancel"' not in body
    assert 'data-testid="search-scope"' in body
    chosen = board.viewer.get(reverse("oqronboard:runs"), {"q": "disk", "status": "cancelled"}).content.decode()
    assert 'data-run-id="r-cancel"' in chosen and 'data-testid="search-scope"' not in chosen


def test_run_lists_keep_the_start_time_and_worker_on_one_line(board: Board):
    put_runs(board.plane, [run_value("r-1", worker="vm-12345-abcdefabcdefabcdef-long-worker-id")])
    body = board.viewer.get(reverse("oqronboard:runs")).content.decode()
    row = body.split('data-run-id="r-1"')[1].split("</tr>")[0]
    assert '<td class="nowrap">' in row and 'title="vm-12345-abcdefabcdefabcdef-long-worker-id"' in row
    assert " UTC</time>" not in row  # the short form; the full time is the title


def test_a_running_runs_header_times_follow_the_live_panel(board: Board):
    """The header's "started … ago" and "so far" refresh with each poll (out of band),
    so they never contradict the live panel's "running for"."""
    put_runs(board.plane, [run_value("live-2", status="running", started=now_ms() - 6_100)])
    page = board.viewer.get(reverse("oqronboard:run", args=["live-2"])).content.decode()
    assert page.count('id="run-started-ago"') == 1 and page.count('<dd id="run-duration"') == 1
    assert "hx-swap-oob" not in page  # the first render has no out-of-band copies

    live = board.viewer.get(reverse("oqronboard:run-live", args=["live-2"]), HTTP_HX_REQUEST="true")
    body = live.content.decode()
    ago = re.search(r'<span class="muted" id="run-started-ago" hx-swap-oob="true">\((.*?) ago\)</span>', body)
    so_far = re.search(r'<dd id="run-duration" hx-swap-oob="true" data-testid="run-duration">(.*?) <span', body)
    running_for = re.search(r"Running for (.*?):", body)
    assert ago and so_far and running_for, body
    assert ago.group(1) == so_far.group(1) == running_for.group(1)
    assert ago.group(1).endswith(" s") and float(ago.group(1)[:-2]) >= 6.1
