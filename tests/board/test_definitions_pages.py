"""The definitions page and pausing / resuming queues through the engine."""

from __future__ import annotations

import json

from django.urls import reverse

from tests.board.seed import Board, job_value, put_jobs, queue_control


def test_every_definition_and_control_record(board: Board):
    queue_control(board.plane, "emails", paused=True)
    queue_control(board.plane, "sms")
    board.plane.put("worker", "sms", {"name": "sms", "queue": "sms", "concurrency": 2, "handler": "app.sms"})
    board.plane.put("cron", "nightly", {"expression": "0 3 * * *"})
    board.plane.put("audit", "0000000000001-x", {"action": "retry"})  # a custom record: not a definition
    body = board.viewer.get(reverse("oqronboard:definitions")).content.decode()
    for hook in ('data-testid="namespace-queue"', 'data-testid="namespace-worker"', 'data-testid="namespace-cron"',
                 'data-testid="paused-emails"', 'data-testid="running-sms"', "0 3 * * *", "app.handlers.emails"):
        assert hook in body, hook
    assert "namespace-audit" not in body
    panel = board.viewer.get(reverse("oqronboard:definitions"), {"panel": "list"},
                             HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in panel and 'data-testid="namespace-cron"' in panel


def test_pause_and_resume_a_queue(board: Board):
    queue_control(board.plane, "emails")
    page = board.operator.get(reverse("oqronboard:definitions")).content.decode()
    assert 'data-testid="pause-emails"' in page and 'data-testid="resume-emails"' not in page

    response = board.operator.post(reverse("oqronboard:queue-pause", args=["emails"]), HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and json.loads(response["HX-Trigger"]) == {"board:refresh": {}}
    body = response.content.decode()
    assert 'data-testid="resume-emails"' in body and 'data-testid="paused-emails"' in body and "<html" not in body
    assert board.scope.queue("emails").is_paused()
    assert board.plane.get("queue", "emails").value["handler"] == "app.handlers.emails"  # the rest is kept

    response = board.operator.post(reverse("oqronboard:queue-resume", args=["emails"]), {"next": "/jobs/emails/"})
    assert response.status_code == 302 and response["Location"] == "/jobs/emails/"
    assert not board.scope.queue("emails").is_paused()
    actions = sorted(r.value["action"] for r in board.plane.list("audit").records)
    assert actions == ["pause", "resume"]


def test_pausing_a_queue_no_worker_registered_yet(board: Board):
    put_jobs(board.plane, [job_value("fresh", "job-1")])  # known by its jobs, not by a record
    board.operator.post(reverse("oqronboard:queue-pause", args=["fresh"]))
    assert board.plane.get("queue", "fresh").value["paused"] is True


def test_an_offsite_next_is_ignored(board: Board):
    queue_control(board.plane, "emails")
    response = board.operator.post(reverse("oqronboard:queue-pause", args=["emails"]), {"next": "https://evil.example/"})
    assert response["Location"] == reverse("oqronboard:definitions")


def test_a_batch_queue_shows_its_batch_options(board: Board):
    from types import SimpleNamespace

    from oqronkit import Batch, Registry
    from oqronkit.queues.queue import Queue
    from oqronkit.worker.queue_definitions import publish_queue_definitions

    host = SimpleNamespace(registry=Registry())  # a queue needs only its registry to be declared
    bulk = Queue("bulk", handler=lambda jobs: None, batch=Batch(size=50, max_wait=0.25, group_by="tenant"),
                 engine=host)  # type: ignore[arg-type]
    plain = Queue("plain", handler=lambda ctx: None, engine=host)  # type: ignore[arg-type]
    publish_queue_definitions(board.plane, {"bulk": (bulk, 1), "plain": (plain, 1)})  # what a worker writes
    assert board.plane.get("queue", "bulk").value["batch"] == {"size": 50, "maxWait": 0.25, "groupBy": "tenant"}
    shown = "batch: size 50, max wait 0.25 s, group by <code>tenant</code>"
    assert shown in board.viewer.get(reverse("oqronboard:definitions")).content.decode()
    page = board.viewer.get(reverse("oqronboard:queue-jobs", args=["bulk"])).content.decode()
    assert shown in page and 'data-testid="queue-batch"' in page
    assert 'data-testid="queue-batch"' not in board.viewer.get(reverse("oqronboard:queue-jobs",
                                                                       args=["plain"])).content.decode()
