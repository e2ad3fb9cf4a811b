"""Everything from job payloads, errors and logs reaches the page escaped."""

from __future__ import annotations

import json

from django.urls import reverse

from oqronkit.live import publish_runs
from tests.board.seed import Board, dead_job, error, put_jobs, put_runs, queue_control, run_value

EVIL = "<script>alert('pwned')</script>"
EVIL_ATTR = '"><img src=x onerror=alert(1)>'


def seed(board: Board) -> None:
    queue_control(board.plane, "emails")
    job = dead_job("emails", "evil-job", message=f"bad {EVIL}", kind="ValueError", data={"html": EVIL})
    put_jobs(board.plane, [job])
    put_runs(board.plane, [
        run_value("evil-run", status="failed", job_id="evil-job", input={"html": EVIL, "attr": EVIL_ATTR},
                  output=None, error=error(f"bad {EVIL}"), logs=[("info", f"log line {EVIL}"), ("error", EVIL_ATTR)]),
        run_value("evil-live", status="running", name=EVIL_ATTR),
    ])
    publish_runs(board.scope.engine.hot, [{
        "id": "evil-live", "progressPercent": 5, "progressLabel": EVIL,
        "logs": [{"level": EVIL_ATTR, "msg": EVIL, "ts": 1}]}], ttl_ms=60_000)


def assert_escaped(body: str, where: str) -> None:
    assert "<script>alert" not in body, where
    assert "<img src=x" not in body, where
    assert "onerror=alert" not in body or "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in body, where


def test_payloads_errors_and_logs_are_escaped_everywhere(board: Board):
    seed(board)
    pages = {
        "run detail": reverse("oqronboard:run", args=["evil-run"]),
        "live panel": reverse("oqronboard:run-live", args=["evil-live"]),
        "runs": reverse("oqronboard:runs"),
        "failed runs": reverse("oqronboard:failed-runs"),
        "dead letters": reverse("oqronboard:dead-letters"),
        "dead-letter groups": reverse("oqronboard:dead-letters") + "?panel=groups",
        "job detail": reverse("oqronboard:job", args=["emails", "evil-job"]),
        "running run": reverse("oqronboard:run", args=["evil-live"]),
    }
    for where, url in pages.items():
        response = board.operator.get(url)
        assert response.status_code in (200, 286), where
        body = response.content.decode()
        assert_escaped(body, where)
    run_page = board.operator.get(pages["run detail"]).content.decode()
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in run_page  # input, error, log line
    assert "log line &lt;script&gt;" in run_page
    assert "bad &lt;script&gt;alert" in board.operator.get(pages["dead-letter groups"]).content.decode()
    live = board.operator.get(pages["live panel"]).content.decode()
    assert "&lt;script&gt;alert" in live


def test_filter_values_are_escaped_when_echoed(board: Board):
    body = board.viewer.get(reverse("oqronboard:runs"), {"q": EVIL_ATTR, "name": EVIL}).content.decode()
    assert_escaped(body, "run filters")
    assert 'value="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"' in body
    body = board.viewer.get(reverse("oqronboard:jump"), {"id": EVIL}).content.decode()
    assert_escaped(body, "jump")


def test_exports_are_not_html(board: Board):
    seed(board)
    response = board.operator.get(reverse("oqronboard:dead-export"), {"format": "json"})
    assert response["Content-Type"] == "application/json"
    rows = json.loads(b"".join(response.streaming_content))
    assert rows[0]["error_message"] == f"bad {EVIL}"  # data, untouched, never rendered as HTML
