"""``/operations/new/``: one form starts any tracked operation (issue 37, item 5): retry
or delete dead letters, replay a handler's runs, resend webhook deliveries. Operators
only, CSRF, audited; a bad value or a refusal is shown on the form with 400, never a
500, and nothing is started."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from oqronkit.operations import Operations
from tests.board.seed import Board, dead_job, put_jobs, put_runs, queue_control, run_value
from tests.board.test_operation_targets import audit, drain, seed_pricing
from tests.board.webhook_seed import attempt, declare, fire, settle

URL = "oqronboard:operation-create"
HOSTILE = "<script>alert(1)</script>"


def post(board: Board, action: str, **fields: str):
    return board.operator.post(reverse(URL), {"form": "new", "action": action, **fields})


def started(board: Board) -> list:
    return Operations(board.scope.engine).list()[0]


def test_the_form_offers_every_action_to_operators_only(board: Board):
    page = board.operator.get(reverse(URL), {"action": "replay"})
    text = page.content.decode()
    assert page.status_code == 200 and 'data-testid="operation-new-form"' in text
    for action in ("retry", "delete", "replay", "resend"):
        assert f'data-testid="action-{action}"' in text
    assert 'value="replay" checked' in text and 'name="replay-name"' in text and 'name="resend-webhook"' in text
    assert 'name="csrfmiddlewaretoken"' in text
    assert board.viewer.get(reverse(URL)).status_code == 403
    assert board.viewer.post(reverse(URL), {"form": "new", "action": "retry"}).status_code == 403
    ops_page = board.operator.get(reverse("oqronboard:operations")).content.decode()
    assert 'data-testid="operation-new"' in ops_page
    assert 'data-testid="operation-new"' not in board.viewer.get(reverse("oqronboard:operations")).content.decode()
    assert started(board) == []


def test_a_replay_from_the_form_runs_and_is_audited(board: Board):
    seed_pricing(board, 12)
    made = post(board, "replay", **{"replay-name": "pricing", "replay-status": "completed", "replay-window": "24h",
                                    "replay-last": "10", "name": "after deploy 42"})
    (op,) = started(board)
    assert made.status_code == 302 and made["Location"] == reverse("oqronboard:operation", args=[op.id])
    assert (op.action, op.name, op.planned, op.filter.last) == ("replay", "after deploy 42", 10, 10)  # type: ignore[union-attr]
    drain(board, chunk=4)
    assert Operations(board.scope.engine).get(op.id).progress.done == 10
    (entry,) = audit(board, "operation-replay")
    assert entry["operation"] == op.id and entry["ok"] is True


def test_retry_delete_and_resend_from_the_form(board: Board):
    put_jobs(board.plane, [dead_job("emails", f"e{i}") for i in range(3)])
    assert post(board, "retry", **{"dead-queue": "emails"}).status_code == 302
    unconfirmed = post(board, "delete", **{"dead-queue": "emails"})
    assert unconfirmed.status_code == 400 and "tick the box to confirm" in unconfirmed.content.decode()
    assert post(board, "delete", **{"dead-queue": "emails", "confirmed": "on"}).status_code == 302
    hook = declare(board)
    (delivery, *_) = fire(hook)
    attempt(board, hook, delivery, status="failed", http=500)
    settle(board, hook, delivery, dead=True)
    assert post(board, "resend", **{"resend-webhook": hook.name, "resend-window": "24h"}).status_code == 302
    assert sorted(op.action for op in started(board)) == ["delete", "resend", "retry"]
    drain(board)
    resend = next(op for op in started(board) if op.action == "resend")
    assert resend.status == "done" and resend.progress.done == 1
    assert {e["action"] for e in (r.value for r in board.plane.list("audit").records)} >= {
        "operation-retry", "operation-delete", "operation-resend"}

def test_bad_input_is_shown_on_the_form_with_400_and_nothing_starts(board: Board):
    queue_control(board.plane, "emails")
    put_runs(board.plane, [run_value("e1", name="emails", job_id="j1")])
    cases = [
        ("replay", {}, "Say which handler"),
        ("replay", {"replay-name": "emails"}, "&#x27;emails&#x27; is not declared replayable=True"),
        ("replay", {"replay-name": "pricing", "replay-last": "-3"}, "greater than or equal to 1"),
        ("replay", {"replay-name": "pricing", "replay-status": "nope"}, "Select a valid choice"),
        ("replay", {"replay-name": "bad:name"}, "must be 1-100 characters without"),
        ("replay", {"replay-name": "x" * 101}, "at most 100 characters"),
        ("resend", {"resend-window": "99y"}, "Select a valid choice"),
        ("retry", {"dead-queue": "a" * 300}, "errorlist"),
        ("explode", {}, "Select a valid choice"),
        ("replay", {"replay-name": HOSTILE}, "&lt;script&gt;"),
    ]
    for action, fields, shown in cases:
        response = post(board, action, **fields)
        text = response.content.decode()
        assert response.status_code == 400, (action, fields, response.status_code)
        assert 'data-testid="operation-new-form"' in text and shown in text, (action, fields)
        assert HOSTILE not in text
    assert started(board) == []
    refused = [e["result"] for e in audit(board, "operation-replay") if not e["ok"]]
    assert len(refused) == 2 and any("'emails' is not declared replayable=True" in r for r in refused)  # and HOSTILE


def test_csrf_is_enforced(board: Board):
    seed_pricing(board, 2)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(get_user_model().objects.get(pk=board.users["operator"].pk))
    response = strict.post(reverse(URL), {"form": "new", "action": "replay", "replay-name": "pricing"})
    assert response.status_code == 403 and started(board) == []
