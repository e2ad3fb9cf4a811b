"""A webhook's actions: enable / disable an endpoint (with the reason), resend one
delivery, resend all the log matched (confirmed, with the count); operators only,
audited, through the engine, 400 on bad input, 404 for another scope's."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from oqronkit.clock import now_ms
from tests.board.seed import Board
from tests.board.webhook_seed import SeededWebhook, attempt, breaker, declare, fire, settle


@pytest.fixture
def billing(board: Board) -> SeededWebhook:
    return declare(board)


def endpoint(board: Board, name: str = "crm") -> dict:
    return board.plane.get("webhook_endpoints:billing", name).value


def audit_entries(board: Board) -> list[dict]:
    return sorted((r.value for r in board.plane.list("audit").records), key=lambda e: e["id"], reverse=True)


def test_a_viewer_is_refused_every_webhook_action_and_nothing_changes(board: Board, billing: SeededWebhook):
    delivery = fire(billing)[0]
    attempt(board, billing, delivery, status="failed", http=500)
    settle(board, billing, delivery, dead=True)
    before = endpoint(board)
    for name, args, data in (("endpoint-disable", ["billing", "crm"], {"reason": "x"}),
                             ("endpoint-enable", ["billing", "crm"], {}),
                             ("webhook-resend", ["billing", delivery], {}),
                             ("webhook-resend-matching", [], {"rendered_at": now_ms(), "confirmed": "on"})):
        assert board.viewer.post(reverse(f"oqronboard:{name}", args=args), data).status_code == 403, name
    assert endpoint(board) == before and audit_entries(board) == []
    assert board.plane.get(f"queue_dlq:{billing.queue}", delivery) is not None
    page = board.viewer.get(reverse("oqronboard:webhooks")).content.decode()
    assert 'data-testid="disable-' not in page and 'data-testid="enable-' not in page
    log = board.viewer.get(reverse("oqronboard:webhook-log")).content.decode()
    assert 'data-testid="resend-matching"' not in log


def test_disable_with_a_reason_then_enable_audited_and_the_breaker_closes(board: Board, billing: SeededWebhook):
    breaker(board, billing, "crm", "open")
    url = reverse("oqronboard:endpoint-disable", args=["billing", "crm"])
    response = board.operator.post(url, {"reason": "CRM migration"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and json.loads(response["HX-Trigger"]) == {"board:refresh": {}}
    assert "disabled: CRM migration" in response.content.decode()
    value = endpoint(board)
    assert value["enabled"] is False and value["disabledReason"] == "CRM migration"
    # The control record is the workers': the board's engine object never rewrote it.
    entry = audit_entries(board)[0]
    assert entry["action"] == "disable-endpoint" and entry["reason"] == "CRM migration" and entry["ok"] is True
    assert entry["webhook"] == "billing" and entry["endpoint"] == "crm" and entry["user"].startswith("olivia-")
    page = board.operator.get(reverse("oqronboard:webhooks")).content.decode()
    assert 'data-testid="enable-billing-crm"' in page and "CRM migration" in page
    response = board.operator.post(reverse("oqronboard:endpoint-enable", args=["billing", "crm"]))
    assert response.status_code == 302 and response["Location"] == reverse("oqronboard:webhooks")
    assert endpoint(board)["enabled"] is True
    assert board.plane.get("webhook_cb", "billing/crm").value["state"] == "closed"
    assert [e["action"] for e in audit_entries(board)] == ["enable-endpoint", "disable-endpoint"]


def test_the_board_never_rewrites_the_webhooks_control_record(board: Board, billing: SeededWebhook):
    before = board.plane.get("webhook", "billing").value
    board.operator.post(reverse("oqronboard:endpoint-disable", args=["billing", "crm"]), {"reason": "r"})
    board.operator.post(reverse("oqronboard:endpoint-enable", args=["billing", "crm"]))
    assert board.plane.get("webhook", "billing").value == before


@pytest.mark.parametrize("reason", ["", "   ", "r" * 501])
def test_disable_needs_a_reason(board: Board, billing: SeededWebhook, reason: str):
    response = board.operator.post(reverse("oqronboard:endpoint-disable", args=["billing", "crm"]), {"reason": reason})
    assert response.status_code == 400 and b"reason" in response.content
    assert endpoint(board)["enabled"] is True and audit_entries(board) == []


def test_resend_a_dead_delivery_and_a_completed_one(board: Board, billing: SeededWebhook):
    dead, done = fire(billing)
    attempt(board, billing, dead, status="failed", http=500)
    settle(board, billing, dead, dead=True)
    attempt(board, billing, done)
    settle(board, billing, done)
    response = board.operator.post(reverse("oqronboard:webhook-resend", args=["billing", dead]))
    assert response.status_code == 302
    assert board.plane.get(f"queue_dlq:{billing.queue}", dead) is None
    assert board.plane.get(f"queue_job:{billing.queue}", dead).value["status"] == "waiting"
    response = board.operator.post(reverse("oqronboard:webhook-resend", args=["billing", done]), HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "sent again" in response.content.decode()
    job = board.plane.get(f"queue_job:{billing.queue}", done).value
    assert job["data"] == billing.deliveries[done]  # the same message id, event and data
    entries = audit_entries(board)
    assert [e["action"] for e in entries] == ["resend", "resend"] and all(e["ok"] for e in entries)
    assert entries[0]["ids"] == [f"{billing.queue}/{done}"]
    assert board.plane.list(f"audit:job:{billing.queue}:{dead}").records


def test_resend_of_a_queued_delivery_leaves_it(board: Board, billing: SeededWebhook):
    queued = fire(billing)[0]
    attempt(board, billing, queued, status="failed", http=503)
    response = board.operator.post(reverse("oqronboard:webhook-resend", args=["billing", queued]),
                                   HTTP_HX_REQUEST="true")
    assert "still queued" in response.content.decode()
    assert audit_entries(board)[0]["ok"] is False


def test_resend_all_matching_confirms_with_the_count_then_resends_only_those(board: Board, billing: SeededWebhook):
    rendered = now_ms()
    deliveries = fire(billing) + fire(billing, "user.created")  # shop, crm; crm
    for d in deliveries:
        attempt(board, billing, d, status="failed", http=500, started=rendered - 5000)
        settle(board, billing, d, dead=True)
    late = fire(billing, "user.deleted")[0]
    attempt(board, billing, late, status="failed", http=500, started=rendered + 60_000)  # after the render
    settle(board, billing, late, dead=True)
    log = board.operator.get(reverse("oqronboard:webhook-log"), {"status": "failed"}).content.decode()
    assert 'data-testid="resend-matching"' in log
    url = reverse("oqronboard:webhook-resend-matching")
    confirm = board.operator.post(url, {"status": "failed", "rendered_at": rendered})
    body = confirm.content.decode()
    assert confirm.status_code == 200 and re.search(r'data-testid="resend-count">3<', body), body[-2000:]
    assert audit_entries(board) == []  # the confirmation changes nothing
    done = board.operator.post(url, {"status": "failed", "rendered_at": rendered, "confirmed": "on"}, follow=True)
    assert b"Sent 3 of 3 delivery(ies) again" in done.content
    for d in deliveries:
        assert board.plane.get(f"queue_dlq:{billing.queue}", d) is None
    assert board.plane.get(f"queue_dlq:{billing.queue}", late) is not None
    entry = audit_entries(board)[0]
    assert entry["action"] == "resend" and entry["idCount"] == 3
    assert entry["filters"] == {"status": "failed", "window": "24h"}
    assert entry["renderedAt"] == rendered


def test_resend_matching_needs_the_render_time_and_good_filters(board: Board, billing: SeededWebhook):
    url = reverse("oqronboard:webhook-resend-matching")
    for data in ({}, {"rendered_at": "soon"}, {"rendered_at": "1" * 30},
                 {"rendered_at": "1", "window": "2y"}, {"rendered_at": "1", "cursor": "!!"}):
        assert board.operator.post(url, data).status_code == 400, data
    assert board.operator.get(url).status_code == 405


def test_unknown_webhook_endpoint_or_delivery_is_404(board: Board, billing: SeededWebhook):
    for args in (["billing", "nobody"], ["nope", "crm"]):
        assert board.operator.post(reverse("oqronboard:endpoint-disable", args=args),
                                   {"reason": "r"}).status_code == 404
        assert board.operator.post(reverse("oqronboard:endpoint-enable", args=args)).status_code == 404
    assert board.operator.post(reverse("oqronboard:webhook-resend", args=["billing", "m@crm"])).status_code == 404
    assert board.operator.post(reverse("oqronboard:webhook-resend", args=["nope", "m@crm"])).status_code == 404
    assert audit_entries(board) == []


def test_actions_refuse_get_and_need_csrf(board: Board, billing: SeededWebhook):
    assert board.operator.get(reverse("oqronboard:endpoint-enable", args=["billing", "crm"])).status_code == 405
    user = get_user_model().objects.get(username__startswith="olivia-")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    url = reverse("oqronboard:endpoint-disable", args=["billing", "crm"])
    assert client.post(url, {"reason": "r"}).status_code == 403
    page = client.get(reverse("oqronboard:webhooks")).content.decode()
    token = re.search(r'hx-headers=\'\{"X-CSRFToken": "([^"]+)"\}\'', page).group(1)
    assert client.post(url, {"reason": "r"}, HTTP_X_CSRFTOKEN=token, HTTP_HX_REQUEST="true").status_code == 200
    assert endpoint(board)["enabled"] is False


def test_another_scopes_webhooks_are_not_acted_on(board: Board, billing: SeededWebhook):
    from oqronboard.base.scope import BoardScope

    other = BoardScope(board.db.project + "-other", board.db.environment)
    spy = declare(board, "spy", scope=other)
    delivery = fire(spy)[0]
    attempt(board, spy, delivery, status="failed", http=500)
    settle(board, spy, delivery, dead=True)
    assert board.operator.post(reverse("oqronboard:endpoint-disable", args=["spy", "crm"]),
                               {"reason": "r"}).status_code == 404
    assert board.operator.post(reverse("oqronboard:webhook-resend", args=["spy", delivery])).status_code == 404
    done = board.operator.post(reverse("oqronboard:webhook-resend-matching"),
                               {"rendered_at": now_ms(), "confirmed": "on"}, follow=True)
    assert b"Sent 0 of 0" in done.content
    durable = other.engine.durable
    assert durable.get("webhook_endpoints:spy", "crm").value["enabled"] is True
    assert durable.get("queue_dlq:webhook/spy", delivery) is not None
