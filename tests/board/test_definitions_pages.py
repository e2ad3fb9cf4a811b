"""The definitions page and pausing / resuming queues through the engine."""

from __future__ import annotations

import json

from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from oqronboard import queues
from oqronboard.definitions.queries import definitions
from tests.board.seed import Board, dead_job, job_value, put_jobs, queue_control


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


def test_only_queue_records_probe_the_jobs_table(board: Board):
    """Each queue record costs two index probes into oqron_jobs (does its queue hold
    jobs, dead letters); the page's other records, most of its rows, none."""
    queue_control(board.plane, "emails")
    queue_control(board.plane, "sms")
    queue_control(board.plane, "idle")
    put_jobs(board.plane, [job_value("emails", "w1"), dead_job("sms", "d1")])
    board.plane.put("worker", "emails", {"name": "emails", "queue": "emails"})  # named like a queue with jobs
    for i in range(20):
        board.plane.put("cron", f"nightly-{i}", {"expression": "0 3 * * *"})
    connection = connections[board.db.alias]
    with CaptureQueriesContext(connection) as captured:
        records = definitions(board.scope, annotate=queues.usage_annotations(board.scope))
    usage = {(r.namespace, r.id): (bool(r.holds_jobs), bool(r.holds_dead)) for r in records}
    assert usage[("queue", "emails")] == (True, False) and usage[("queue", "sms")] == (False, True)
    assert usage[("queue", "idle")] == (False, False) and usage[("worker", "emails")] == (False, False)
    assert [queues.is_stale(r, set()) for r in records if r.namespace == "queue"] == [False, True, False]
    if board.db.alias == "default":
        return  # SQLite's plans do not count loops
    [query] = [q["sql"] for q in captured.captured_queries if "oqron_records" in q["sql"]]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + query)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan

    def probes(node: dict) -> int:
        own = node["Actual Loops"] if "oqron_jobs" in node.get("Relation Name", "") else 0
        return own + sum(probes(child) for child in node.get("Plans", []))

    # Two per queue record, none for the 21 others (fewer when the planner hashes the jobs it read once).
    assert probes(plan[0]["Plan"]) <= 2 * 3
