"""Tracked bulk operations on the board (issue 37, item 5): started from the dead
letters' filters with no cap, the page's progress (live panel, 286 once finished), the
history list, pause / resume / cancel (operators, audited, CSRF), the JSON API, escaping
and scope isolation."""

from __future__ import annotations

import json
import time

from django.test import Client
from django.urls import reverse

from oqronboard.base.scope import BoardScope
from oqronkit.clock import now_ms
from oqronkit.operations import OperationRunner, Operations
from tests.board.seed import MINUTE, Board, dead_job, put_jobs

HOSTILE = "<script>alert(1)</script>"


def seed(board: Board, count: int = 5) -> int:
    now = now_ms()
    put_jobs(board.plane, [dead_job("emails", f"e{i}", message=f"user {i} not found {HOSTILE}", kind="LookupError",
                                    died=now - MINUTE + i) for i in range(count)])
    put_jobs(board.plane, [dead_job("sms", "s1", message="SMTP refused", died=now - MINUTE)])
    return now


def run_all(scope: BoardScope) -> None:
    OperationRunner(scope.engine, owner="test", chunk=2).drain()


def audit_actions(board: Board) -> list[tuple[str, str, bool]]:
    return [(r.value["action"], r.value["user"], r.value["ok"]) for r in board.plane.list("audit").records]


def test_retry_all_matching_becomes_an_operation_with_a_progress_page(board: Board):
    rendered = seed(board, count=5)
    page = board.operator.get(reverse("oqronboard:dead-letters")).content.decode()
    assert 'data-testid="retry-matching"' in page and reverse("oqronboard:operation-create") in page
    response = board.operator.post(reverse("oqronboard:operation-create"),
                                   {"action": "retry", "queue": "emails", "q": "not found", "rendered_at": rendered})
    assert response.status_code == 302
    (op,), _ = Operations(board.scope.engine).list()
    assert response["Location"] == reverse("oqronboard:operation", args=[op.id])
    operator = board.users["operator"].username
    assert (op.status, op.planned, op.queues, op.created_by) == ("running", 5, ("emails",), operator)
    body = board.viewer.get(response["Location"]).content.decode()
    assert 'data-testid="operation-status">running<' in body and "0 of 5 dead letters looked at" in body
    assert 'data-poll hx-get="' in body and HOSTILE not in body
    live = board.viewer.get(response["Location"] + "?panel=live", headers={"HX-Request": "true"})
    assert live.status_code == 200 and "<html" not in live.content.decode()
    run_all(board.scope)
    live = board.viewer.get(response["Location"] + "?panel=live", headers={"HX-Request": "true"})
    assert live.status_code == 286  # finished: htmx stops polling
    text = live.content.decode()
    assert 'data-testid="operation-status">done<' in text and "5 retried, 0 failed, 0 skipped" in text
    assert 'value="100"' in text
    assert board.plane.count("queue_dlq:emails") == 0 and board.plane.count("queue_dlq:sms") == 1
    assert audit_actions(board) == [("operation-retry", board.users["operator"].username, True)]


def test_the_window_is_the_render_time(board: Board):
    rendered = seed(board, count=2)
    put_jobs(board.plane, [dead_job("emails", "late", died=rendered + 10)])  # died after the page was rendered
    board.operator.post(reverse("oqronboard:operation-create"), {"action": "retry", "rendered_at": rendered})
    run_all(board.scope)
    (op,), _ = Operations(board.scope.engine).list()
    assert (op.progress.done, op.progress.skipped) == (3, 1)
    assert [r.id for r in board.plane.list("queue_dlq:emails").records] == ["late"]


def test_delete_needs_a_confirmation_page(board: Board):
    rendered = seed(board, count=3)
    url = reverse("oqronboard:operation-create")
    page = board.operator.post(url, {"action": "delete", "queue": "emails", "rendered_at": rendered})
    assert page.status_code == 200 and 'data-testid="confirm-operation"' in page.content.decode()
    assert "3 dead letters to look at" in page.content.decode()
    assert Operations(board.scope.engine).list()[0] == []
    done = board.operator.post(url, {"action": "delete", "queue": "emails", "rendered_at": rendered,
                                     "confirmed": "yes"})
    assert done.status_code == 302
    run_all(board.scope)
    assert board.plane.count("queue_dlq:emails") == 0 and board.plane.count("queue_dlq:sms") == 1


def test_pause_resume_cancel_are_audited_and_for_operators(board: Board):
    seed(board)
    op = Operations(board.scope.engine).create("retry", user="someone", queue="emails")
    url = lambda verb: reverse("oqronboard:operation-action", args=[op.id, verb])  # noqa: E731
    assert board.viewer.post(url("pause")).status_code == 403
    body = board.viewer.get(reverse("oqronboard:operation", args=[op.id])).content.decode()
    assert 'data-testid="operation-pause"' not in body
    assert 'data-testid="operation-pause"' in board.operator.get(reverse("oqronboard:operation",
                                                                         args=[op.id])).content.decode()
    assert board.operator.post(url("pause")).status_code == 302
    assert Operations(board.scope.engine).get(op.id).status == "paused"
    run_all(board.scope)
    assert Operations(board.scope.engine).get(op.id).progress.done == 0  # paused: nothing ran
    assert board.operator.post(url("pause")).status_code == 400  # already paused
    fragment = board.operator.post(url("resume"), headers={"HX-Request": "true"})
    assert fragment.status_code == 200 and 'data-testid="operation-status">running<' in fragment.content.decode()
    assert board.operator.post(url("cancel")).status_code == 302
    assert board.operator.post(url("explode")).status_code == 404
    assert Operations(board.scope.engine).get(op.id).status == "cancelled"
    user = board.users["operator"].username
    assert sorted(audit_actions(board)) == [("operation-cancel", user, True), ("operation-pause", user, False),
                                            ("operation-pause", user, True), ("operation-resume", user, True)]
    csrf = Client(enforce_csrf_checks=True)
    csrf.force_login(board.users["operator"])
    assert csrf.post(url("resume")).status_code == 403


def test_the_history_list_newest_first_and_by_status(board: Board):
    seed(board)
    ops = Operations(board.scope.engine)
    first = ops.create("retry", user="ann", queue="sms")
    time.sleep(0.002)  # newest first: a millisecond apart
    second = ops.create("delete", user="bob", queue="emails", search=HOSTILE)
    ops.cancel(first.id, user="ann")
    body = board.viewer.get(reverse("oqronboard:operations")).content.decode()
    assert body.count('data-testid="operation-row"') == 2 and HOSTILE not in body and "&lt;script&gt;" in body
    assert body.index(second.id) < body.index(first.id)
    assert 'id="nav-operations"' in body and 'aria-current="page"' in body
    live = board.viewer.get(reverse("oqronboard:operations") + "?panel=list", headers={"HX-Request": "true"})
    assert live.status_code == 200 and live.content.decode().count('data-testid="operation-row"') == 2
    ops.cancel(second.id, user="bob")
    done = board.viewer.get(reverse("oqronboard:operations") + "?panel=list", headers={"HX-Request": "true"})
    assert done.status_code == 286  # nothing runs any more: htmx stops polling
    only = board.viewer.get(reverse("oqronboard:operations") + "?status=cancelled").content.decode()
    assert only.count('data-testid="operation-row"') == 2 and first.id in only
    assert board.viewer.get(reverse("oqronboard:operations") + "?status=nope").status_code == 400


def test_another_scopes_operation_is_a_404(board: Board):
    other = BoardScope(board.db.project + "-other", board.db.environment)
    op = Operations(other.engine).create("retry", user="ann")
    assert board.viewer.get(reverse("oqronboard:operation", args=[op.id])).status_code == 404
    assert board.operator.post(reverse("oqronboard:operation-action", args=[op.id, "cancel"])).status_code == 404
    assert Operations(other.engine).get(op.id).status == "running"


def post_json(client: Client, url: str, data: dict) -> object:
    return client.post(url, json.dumps(data), content_type="application/json")


def test_the_json_api(board: Board):
    rendered = seed(board, count=4)
    create = reverse("oqronboard:api-operations")
    assert post_json(board.viewer, create, {"action": "retry"}).status_code == 403
    assert post_json(board.operator, create, {"action": "delete"}).status_code == 400  # not confirmed
    assert post_json(board.operator, create, {"action": "explode"}).status_code == 400
    made = post_json(board.operator, create, {"action": "retry", "queue": "emails", "rendered_at": rendered,
                                              "name": "After the SMTP fix"})
    assert made.status_code == 201
    op = made.json()
    assert op["name"] == "After the SMTP fix"
    assert (op["status"], op["counts"]["planned"], op["source"]) == ("running", 4, "api")
    listed = board.viewer.get(create).json()
    assert [o["id"] for o in listed["results"]] == [op["id"]] and listed["next_cursor"] is None
    action = lambda verb: reverse("oqronboard:api-operation-action", args=[op["id"], verb])  # noqa: E731
    assert post_json(board.viewer, action("pause"), {}).status_code == 403
    assert post_json(board.operator, action("pause"), {}).json()["status"] == "paused"
    assert post_json(board.operator, action("pause"), {}).status_code == 400
    assert post_json(board.operator, action("resume"), {}).json()["status"] == "running"
    run_all(board.scope)
    shown = board.viewer.get(reverse("oqronboard:api-operation", args=[op["id"]])).json()
    assert (shown["status"], shown["counts"]["done"], shown["percent"]) == ("done", 4, 100)
    assert post_json(board.operator, action("cancel"), {}).status_code == 400  # done already
    assert board.viewer.get(reverse("oqronboard:api-operation", args=["nope"])).status_code == 404
    assert sorted(a for a, _user, _ok in audit_actions(board)) == [
        "operation-cancel", "operation-pause", "operation-pause", "operation-resume", "operation-retry"]  # refusals too
