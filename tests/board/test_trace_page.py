"""The trace page and /api/v1/trace/<id>/ (issue 37, item 1): one correlation id's
entries in time order, nested by cause, each linked to its page; polled while something
is pending; escaped; another scope's entries never show; the jump box and the pages
that show a correlation id lead there."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse

from oqronkit.audit import audit_entry, audit_writes
from oqronkit.clock import now_ms
from oqronkit.contrib.django import engine
from oqronkit.durable import DurablePlane, RecordWrite
from tests.board.seed import Board, job_value, put_jobs, put_runs, run_value

CID = "order-<b>9</b>"


def seed_trace(plane: DurablePlane, cid: str = CID, *, pending: bool = True) -> None:
    """Run A (root) added job B (waiting, or gone once done) whose attempt failed, and
    published a message; a log line of run A; an operator retried job B."""
    start = now_ms() - 60_000
    run_a = run_value("run-a", name="checkout", started=start, output={"ok": True})
    run_a.update(correlationId=cid, endedAt=start + 1500, durationMs=1500)
    run_b = run_value("run-b", name="emails", status="failed", started=start + 2000, job_id="job-b")
    run_b.update(correlationId=cid, causedBy="run-a", endedAt=start + 2400, durationMs=400)
    put_runs(plane, [run_a, run_b])
    job = job_value("emails", "job-b", created=start + 1000)
    job.correlation_id, job.caused_by = cid, "run-a"
    if pending:
        put_jobs(plane, [job])
    plane.put("topic_msg:orders", "msg-1", {"id": "msg-1", "topic": "orders", "publishedAt": start + 1200,
                                            "correlationId": cid, "causedBy": "run-a", "partition": 0, "offset": 0})
    plane.put("module_logs:queue", "log-1", {"at": start + 500, "module": "queue", "level": "warning",
                                             "message": "<i>slow</i> checkout", "correlationId": cid,
                                             "runId": "run-a"})
    entry = audit_entry(at=start + 3000, user="olivia", action="retry", source="board", queue="emails",
                        targets=[("emails", "job-b")], ok=True, result="1 retried", project="p", environment="e")
    plane.put_many(audit_writes(entry, [("emails", "job-b")], {("emails", "job-b"): cid}))
    plane.put_many([RecordWrite("runs", "unrelated", run_value("unrelated"))])


def test_the_page_lists_every_entry_nested_by_cause_and_linked(board: Board):
    seed_trace(board.plane)
    response = board.viewer.get(reverse("oqronboard:trace", args=[CID]))
    assert response.status_code == 200
    body = response.content.decode()
    assert "<b>9</b>" not in body and "&lt;b&gt;9&lt;/b&gt;" in body and "<i>slow</i>" not in body
    rows = [(kind, depth) for kind, depth in _rows(body)]
    # run A; under it its log line (+0.5 s), job B (+1 s) with its run and the audit, the message (+1.2 s)
    assert rows == [("run", "0"), ("log", "1"), ("job", "1"), ("run", "2"), ("audit", "2"), ("message", "1")]
    for url in (reverse("oqronboard:run", args=["run-a"]), reverse("oqronboard:run", args=["run-b"]),
                reverse("oqronboard:job", args=["emails", "job-b"]),
                reverse("oqronboard:topic-message", args=["orders", "msg-1"])):
        assert f'href="{url}"' in body, url
    assert "unrelated" not in body and "1.5 s" in body and "400 ms" in body
    assert 'data-poll hx-get="' in body  # job B still waits


def test_a_finished_trace_stops_polling_and_a_done_jobs_run_keeps_its_cause(board: Board):
    seed_trace(board.plane, pending=False)
    url = reverse("oqronboard:trace", args=[CID])
    body = board.viewer.get(url).content.decode()
    assert "data-poll hx-get" not in body
    assert _rows(body)[:3] == [("run", "0"), ("log", "1"), ("message", "1")] and ("run", "1") in _rows(body)
    live = board.viewer.get(url, {"panel": "live"}, headers={"HX-Request": "true"})
    assert live.status_code == 286 and 'data-testid="trace-table"' in live.content.decode()


def test_unknown_ids_and_other_scopes_are_404(board: Board):
    seed_trace(engine.durable_for("other-shop", "production"), "secret-trace")
    for cid in ("secret-trace", "nothing-here"):
        response = board.viewer.get(reverse("oqronboard:trace", args=[cid]))
        assert response.status_code == 404 and "secret" not in response.content.decode().replace(cid, "")
        assert board.viewer.get(reverse("oqronboard:api-trace", args=[cid])).status_code == 404


def test_the_api_answers_the_same_timeline_as_json(board: Board):
    seed_trace(board.plane)
    url = reverse("oqronboard:api-trace", args=[CID])
    assert Client().get(url).status_code == 401
    body = board.viewer.get(url).json()
    assert body["correlationId"] == CID and body["truncated"] is False
    entries = body["entries"]
    assert [(e["kind"], e["depth"]) for e in entries][:3] == [("run", 0), ("log", 1), ("job", 1)]
    job = entries[2]
    assert job["parent"] == "run:run-a" and job["url"] == reverse("oqronboard:job", args=["emails", "job-b"])
    assert body["startedAt"] == entries[0]["at"] and body["endedAt"] >= entries[-1]["at"]


def test_the_jump_box_and_the_pages_showing_an_id_lead_to_the_timeline(board: Board):
    seed_trace(board.plane)
    trace_url = reverse("oqronboard:trace", args=[CID])
    jumped = board.viewer.get(reverse("oqronboard:jump"), {"id": CID})
    assert jumped.status_code == 302 and jumped["Location"] == trace_url
    for page in (reverse("oqronboard:run", args=["run-b"]), reverse("oqronboard:job", args=["emails", "job-b"]),
                 reverse("oqronboard:topic-message", args=["orders", "msg-1"])):
        assert f'href="{trace_url}"' in board.viewer.get(page).content.decode(), page


def _rows(body: str) -> list[tuple[str, str]]:
    import re

    return re.findall(r'data-testid="trace-row" data-kind="(\w+)" data-depth="(\d+)"', body)


def test_an_operators_action_on_a_correlated_job_joins_its_trace(board: Board):
    from oqronkit.clock import now_ms as now
    from tests.board.seed import dead_job, queue_control

    queue_control(board.plane, "emails")
    job = dead_job("emails", "dead-1")
    job.correlation_id = "order-audited"
    put_jobs(board.plane, [job])
    response = board.operator.post(reverse("oqronboard:api-job-action", args=["emails", "dead-1", "retry"]),
                                   "{}", content_type="application/json")
    assert response.status_code == 200, response.content
    entries = board.viewer.get(reverse("oqronboard:api-trace", args=["order-audited"])).json()["entries"]
    audit = [e for e in entries if e["kind"] == "audit"]
    assert len(audit) == 1 and audit[0]["title"].startswith("retry by ") and audit[0]["at"] <= now()
    assert audit[0]["parent"] == "job:emails/dead-1" and audit[0]["depth"] == 1
