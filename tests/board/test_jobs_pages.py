"""Jobs per queue, job detail, and the job actions through the engine, audited."""

from __future__ import annotations

import json
import re

from django.urls import reverse

from oqronkit.backends.hot_types import Signal
from oqronkit.clock import now_ms
from tests.board.seed import MINUTE, Board, dead_job, job_value, put_jobs, put_runs, queue_control, run_value


def job_ids(body: str) -> list[str]:
    return re.findall(r'<a href="/jobs/[^/]+/([^"]+)/" data-open>', body)


def test_jobs_of_a_queue_by_status_newest_first(board: Board):
    now = now_ms()
    queue_control(board.plane, "emails")
    put_jobs(board.plane, [
        job_value("emails", "w-old", created=now - 3 * MINUTE),
        job_value("emails", "w-new", created=now - MINUTE),
        job_value("emails", "d-1", status="delayed", created=now, run_at=now + 60 * MINUTE),
        job_value("emails", "p-1", status="waiting-dependencies", created=now),
        job_value("emails", "b-1", status="blocked", created=now),
        job_value("sms", "other", created=now),
    ])
    page = board.viewer.get(reverse("oqronboard:queue-jobs", args=["emails"]), {"status": "waiting"}).content.decode()
    assert job_ids(page) == ["w-new", "w-old"]
    for status, expected in (("delayed", ["d-1"]), ("waiting-dependencies", ["p-1"]), ("blocked", ["b-1"]),
                             ("active", [])):
        body = board.viewer.get(reverse("oqronboard:queue-jobs", args=["emails"]), {"status": status}).content.decode()
        assert job_ids(body) == expected, status
    assert 'data-testid="count-waiting-dependencies">1<' in page and 'data-testid="count-blocked">1<' in page
    assert board.viewer.get(reverse("oqronboard:queue-jobs", args=["emails"]), {"status": "nope"}).status_code == 400
    assert board.viewer.get(reverse("oqronboard:queue-jobs", args=["em:ails"])).status_code == 400


def test_queue_counts_come_from_the_hot_plane(board: Board):
    queue_control(board.plane, "emails")
    queue = board.scope.queue("emails")
    queue.add_bulk([{"n": i} for i in range(3)])
    queue.add({"n": 9}, delay=3600)
    response = board.viewer.get(reverse("oqronboard:queue-jobs", args=["emails"]), {"panel": "counts"},
                                HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert "<html" not in body
    assert 'data-testid="count-waiting">3<' in body and 'data-testid="count-delayed">1<' in body
    assert 'data-testid="count-active">0<' in body


def test_job_detail_with_runs_and_errors(board: Board):
    now = now_ms()
    put_jobs(board.plane, [dead_job("emails", "j1", message="mailbox full", data={"to": "ada@example.com"})])
    put_runs(board.plane, [run_value("r1", status="failed", job_id="j1", started=now - 2 * MINUTE),
                           run_value("r2", status="failed", job_id="j1", attempts=2, started=now - MINUTE)])
    body = board.viewer.get(reverse("oqronboard:job", args=["emails", "j1"])).content.decode()
    for text in ("ada@example.com", "mailbox full", 'data-testid="job-status">dead<', "/runs/r1/", "/runs/r2/",
                 "failed on attempt 3 of 3", "Errors, attempt by attempt"):
        assert text in body, text
    assert body.index("/runs/r2/") < body.index("/runs/r1/")
    assert board.viewer.get(reverse("oqronboard:job", args=["emails", "missing"])).status_code == 404


def test_promote_cancel_and_retry_through_the_engine(board: Board):
    now = now_ms()
    queue_control(board.plane, "emails")
    queue = board.scope.queue("emails")
    delayed = queue.add({"n": 1}, delay=3600)
    waiting = queue.add({"n": 2})
    put_jobs(board.plane, [dead_job("emails", "dead-1", died=now)])

    response = board.operator.post(reverse("oqronboard:job-action", args=["emails", delayed.id, "promote"]))
    assert response.status_code == 302 and response["Location"] == f"/jobs/emails/{delayed.id}/"
    assert board.plane.get("queue_job:emails", delayed.id).value["status"] == "waiting"

    response = board.operator.post(reverse("oqronboard:job-action", args=["emails", waiting.id, "cancel"]),
                                   HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and json.loads(response["HX-Trigger"]) == {"board:refresh": {}}
    body = response.content.decode()
    assert "<html" not in body and "Cancelled." in body and 'data-testid="job-status">dead<' in body
    assert board.plane.get("queue_dlq:emails", waiting.id).value["deadReason"].startswith("cancelled by olivia-")

    response = board.operator.post(reverse("oqronboard:job-action", args=["emails", "dead-1", "retry"]),
                                   HTTP_HX_REQUEST="true")
    assert "Retried" in response.content.decode()
    assert board.plane.get("queue_job:emails", "dead-1").value["status"] == "waiting"
    assert board.plane.get("queue_dlq:emails", "dead-1") is None

    # Promoting a job that is not delayed is refused politely, and audited as such.
    response = board.operator.post(reverse("oqronboard:job-action", args=["emails", "dead-1", "promote"]), follow=True)
    assert b"Not promoted" in response.content


def test_delete_asks_for_confirmation(board: Board):
    put_jobs(board.plane, [dead_job("emails", "d1")])
    url = reverse("oqronboard:job-action", args=["emails", "d1", "delete"])
    confirm = board.operator.post(url)
    assert confirm.status_code == 200 and b'data-testid="confirm-delete"' in confirm.content
    assert board.plane.get("queue_dlq:emails", "d1") is not None
    done = board.operator.post(url, {"confirmed": "yes"})
    assert done.status_code == 302 and done["Location"] == reverse("oqronboard:dead-letters")
    assert board.plane.get("queue_dlq:emails", "d1") is None


def test_every_action_is_audited_on_the_job_and_the_audit_page(board: Board):
    put_jobs(board.plane, [dead_job("emails", "d1")])
    board.operator.post(reverse("oqronboard:job-action", args=["emails", "d1", "retry"]))
    entries = [r.value for r in board.plane.list("audit").records]
    assert len(entries) == 1
    entry = entries[0]
    assert entry["user"].startswith("olivia-") and entry["action"] == "retry" and entry["ok"] is True
    assert entry["ids"] == ["emails/d1"] and entry["source"] == "board" and entry["result"].startswith("Retried")
    job_page = board.viewer.get(reverse("oqronboard:job", args=["emails", "d1"])).content.decode()
    assert 'data-testid="job-audit"' in job_page and "olivia-" in job_page and "retry" in job_page
    audit_page = board.viewer.get(reverse("oqronboard:audit")).content.decode()
    assert audit_page.count('data-testid="audit-row"') == 1 and "emails/d1" in audit_page


def test_audit_pages_newest_first_with_load_more(board: Board):
    from oqronboard.base.audit import Action

    for i in range(55):
        Action(board.scope, "olivia", "retry", targets=[("emails", f"j{i}")]).save(ok=True, result=f"n{i}")
    first = board.viewer.get(reverse("oqronboard:audit")).content.decode()
    assert first.count('data-testid="audit-row"') == 50
    query = re.search(r'href="\?([^"]+)" hx-get', first).group(1).replace("&amp;", "&")
    rest = board.viewer.get(reverse("oqronboard:audit") + "?" + query, HTTP_HX_REQUEST="true").content.decode()
    assert rest.count('data-testid="audit-row"') == 5 and "<html" not in rest
    assert board.viewer.get(reverse("oqronboard:audit"), {"before": "x" * 41}).status_code == 400


def test_the_queue_page_opens_the_first_tab_with_jobs(board: Board):
    now = now_ms()
    queue_control(board.plane, "emails")
    put_jobs(board.plane, [job_value("emails", "d-1", status="delayed", created=now, run_at=now + 60 * MINUTE)])
    board.scope.engine.hot.signal("emails", [Signal("d-1", run_at=now + 60 * MINUTE)], now)
    body = board.viewer.get(reverse("oqronboard:queue-jobs", args=["emails"])).content.decode()
    assert re.search(r'data-testid="tab-delayed" aria-current="page"', body)
    assert 'href="/jobs/emails/d-1/"' in body
    # A chosen tab stays chosen, even when empty; an empty queue opens on waiting.
    waiting = board.viewer.get(reverse("oqronboard:queue-jobs", args=["emails"]),
                               {"status": "waiting"}).content.decode()
    assert re.search(r'data-testid="tab-waiting" aria-current="page"', waiting)
    empty = board.viewer.get(reverse("oqronboard:queue-jobs", args=["sms"])).content.decode()
    assert re.search(r'data-testid="tab-waiting" aria-current="page"', empty)


def test_a_dead_job_has_no_due_time_and_a_last_run(board: Board):
    job = dead_job("emails", "dead-1")
    job.run_at = now_ms() - 8000
    job.run_id = "r-last"
    put_jobs(board.plane, [job])
    body = board.viewer.get(reverse("oqronboard:job", args=["emails", "dead-1"])).content.decode()
    assert "<dt>Due</dt>" not in body
    assert "<dt>Last run</dt>" in body and "Current run" not in body
