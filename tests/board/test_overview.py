"""The overview: depths, dead letters, oldest waiting job, the last hour, workers."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from oqronkit.clock import now_ms
from oqronkit.live import publish_worker
from tests.board.seed import MINUTE, Board, dead_job, error, job_value, put_jobs, put_runs, queue_control, run_value


def row(body: str, queue: str) -> str:
    return body.split(f'data-testid="queue-row-{queue}"')[1].split("</tr>")[0]


def heartbeat(board: Board, worker: str, queues: dict[str, int]) -> None:
    publish_worker(board.scope.engine.hot, {"id": worker, "queues": queues, "inflight": 1, "heartbeatAt": now_ms()})


def test_queues_with_depths_dead_letters_and_the_last_hour(board: Board):
    now = now_ms()
    queue_control(board.plane, "emails", paused=True)
    queue = board.scope.queue("emails")
    queue.add_bulk([{"n": i} for i in range(4)])
    queue.add({"n": 5}, delay=600)
    put_jobs(board.plane, [job_value("emails", "old-waiting", created=now - 90 * MINUTE),
                           dead_job("emails", "d1"), dead_job("payments", "d2"), dead_job("payments", "d3")])
    put_runs(board.plane, [
        *(run_value(f"ok{i}", started=now - i * MINUTE) for i in range(6)),
        *(run_value(f"bad{i}", status="failed", started=now - 20 * MINUTE, error=error()) for i in range(2)),
        run_value("other-queue", name="payments", status="failed", started=now - MINUTE, error=error()),
        run_value("too-old", started=now - 2 * 60 * MINUTE),
        run_value("still", status="running", started=now - MINUTE),
    ])
    body = board.viewer.get(reverse("oqronboard:home")).content.decode()
    emails = row(body, "emails")
    assert 'data-testid="waiting-emails">4<' in emails  # hot plane: the durable-only job is not signalled
    assert '<td data-label="Delayed" class="num">1</td>' in emails  # delayed
    assert "paused" in emails and 'data-testid="overview-dead-emails"' in emails
    assert re.search(r'overview-dead-emails"[^>]*>1<', emails)
    assert "1h 30m ago" in emails  # the oldest waiting job
    assert "6 ok · 2 failed" in emails and "25%" in emails
    assert "<svg" in emails and 'class="bad"' in emails
    payments = row(body, "payments")
    assert re.search(r'overview-dead-payments"[^>]*>2<', payments) and "100%" in payments
    counts = body.split('data-testid="status-counts"')[1].split("</dl>")[0]
    assert re.search(r"completed</a></dt><dd class=\"num\">6<", counts)
    assert re.search(r"failed</a></dt><dd class=\"num\">3<", counts)
    assert re.search(r"running</a></dt><dd class=\"num\">1<", counts)


def test_no_live_workers_warning_and_unattended_queues(board: Board):
    queue_control(board.plane, "emails")
    queue_control(board.plane, "sms")
    board.scope.queue("emails").add({"n": 1})
    board.scope.queue("sms").add({"n": 1})
    body = board.viewer.get(reverse("oqronboard:home")).content.decode()
    assert 'data-testid="no-workers"' in body and 'data-testid="unattended-emails"' in body

    heartbeat(board, "w-1", {"emails": 5})
    body = board.viewer.get(reverse("oqronboard:home")).content.decode()
    assert 'data-testid="no-workers"' not in body
    assert 'data-testid="unattended-emails"' not in body and 'data-testid="unattended-sms"' in body
    assert 'data-testid="workers"' in body and "w-1" in body


def test_the_live_panel_is_a_fragment_that_polls(board: Board):
    queue_control(board.plane, "emails")
    page = board.viewer.get(reverse("oqronboard:home")).content.decode()
    assert 'id="overview-live"' in page and 'hx-trigger="every 5s, board:refresh from:body"' in page
    panel = board.viewer.get(reverse("oqronboard:home"), {"panel": "live"}, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in panel and 'data-testid="queue-row-emails"' in panel


def test_an_empty_scope_says_how_to_start(board: Board):
    body = board.viewer.get(reverse("oqronboard:home")).content.decode()
    assert "No queue has been seen" in body and "bin/demo" in body


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["memory", "redis"])
def test_without_a_sql_durable_plane_the_board_says_so(admin_client, settings, mode):
    settings.OQRON = {"MODE": mode, "REDIS_URL": "redis://127.0.0.1:6379/15"}
    for url in (reverse("oqronboard:runs"), reverse("oqronboard:failed-runs"), reverse("oqronboard:dead-letters"),
                reverse("oqronboard:definitions"),
                reverse("oqronboard:audit"), reverse("oqronboard:queues")):
        body = admin_client.get(url).content.decode()
        assert 'data-testid="needs-sql"' in body and "needs a SQL durable plane" in body, url
    home = admin_client.get(reverse("oqronboard:home")).content.decode()
    assert 'data-testid="needs-sql"' in home and mode in home


def test_the_overview_hides_internal_queues(board: Board, settings):
    settings.OQRON_INTERNAL_QUEUES = ["demo-ticker"]
    queue_control(board.plane, "emails")
    queue_control(board.plane, "demo-ticker")
    body = board.viewer.get(reverse("oqronboard:home")).content.decode()
    assert 'data-testid="queue-row-emails"' in body
    assert 'data-testid="queue-row-demo-ticker"' not in body and 'data-testid="hidden-queues"' in body
    # The Jobs page still lists it.
    assert "/jobs/demo-ticker/" in board.viewer.get(reverse("oqronboard:queues")).content.decode()
