"""A consumer group's actions: pause, resume, replay (confirmed, with the count) and
retry its dead letters; operators only, audited, through the engine, 400 on bad input."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from oqronboard.views import topic_actions
from oqronkit.clock import now_ms
from oqronkit.operations import OperationRunner, Operations
from oqronkit.topics import groups
from tests.board.seed import MINUTE, Board
from tests.board.topic_seed import SeededTopic, dead, group, publish


@pytest.fixture
def orders(board: Board) -> SeededTopic:
    topic = publish(board, count=12)
    group(board, topic, "billing", handed=12)
    group(board, topic, "shipping", handed=4)
    return topic


def group_record(board: Board, name: str = "billing") -> dict:
    return board.plane.get("topic_groups:orders", name).value


def audit_entries(board: Board) -> list[dict]:
    """Newest first, as the audit page lists them (ids start with the time)."""
    return sorted((r.value for r in board.plane.list("audit").records), key=lambda e: e["id"], reverse=True)


ACTIONS = [
    ("group-pause", "post", {}),
    ("group-resume", "post", {}),
    ("group-replay", "post", {"position": "0", "confirmed": "on"}),
    ("group-replay", "get", {}),
    ("group-retry-dead", "post", {"rendered_at": "99999999999999"}),
]


def test_a_viewer_is_refused_every_group_action_and_nothing_changes(board: Board, orders: SeededTopic):
    dead(board, orders, "billing", orders.ids[0])
    before = group_record(board)
    for name, method, data in ACTIONS:
        response = getattr(board.viewer, method)(reverse(f"oqronboard:{name}", args=["orders", "billing"]), data)
        assert response.status_code == 403, name
    assert group_record(board) == before
    assert board.plane.get("queue_dlq:orders@billing", orders.ids[0]) is not None
    assert audit_entries(board) == []
    page = board.viewer.get(reverse("oqronboard:topics")).content.decode()
    assert 'data-testid="pause-group-' not in page and 'data-testid="replay-' not in page
    assert 'data-testid="retry-dead-' not in page
    history = reverse("oqronboard:topic-group", args=["orders", "billing"])
    assert f'href="{history}"' in page and board.viewer.get(history).status_code == 200  # history is for viewers too


def test_pause_and_resume_a_group_with_htmx_audited(board: Board, orders: SeededTopic):
    url = reverse("oqronboard:group-pause", args=["orders", "billing"])
    response = board.operator.post(url, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and json.loads(response["HX-Trigger"]) == {"board:refresh": {}}
    assert "Group billing of topic orders paused." in response.content.decode()
    assert group_record(board)["paused"] is True
    assert board.plane.get("queue", "orders@billing").value["paused"] is True  # its deliveries stop too
    entry = audit_entries(board)[0]
    assert entry["action"] == "pause" and entry["queue"] == "orders@billing" and entry["ok"] is True
    assert entry["topic"] == "orders" and entry["group"] == "billing" and entry["user"].startswith("olivia-")
    page = board.operator.get(reverse("oqronboard:topics")).content.decode()
    assert 'data-testid="resume-group-orders-billing"' in page
    response = board.operator.post(reverse("oqronboard:group-resume", args=["orders", "billing"]))
    assert response.status_code == 302 and response["Location"] == reverse("oqronboard:topic-log", args=["orders"])
    assert group_record(board)["paused"] is False
    assert board.plane.get("queue", "orders@billing").value["paused"] is False
    assert [e["action"] for e in audit_entries(board)] == ["resume", "pause"]


def test_replay_confirms_with_the_count_then_moves_the_group(board: Board, orders: SeededTopic):
    url = reverse("oqronboard:group-replay", args=["orders", "billing"])
    form = board.operator.get(url)
    assert form.status_code == 200 and 'data-testid="replay-form"' in form.content.decode()
    before = group_record(board)
    confirm = board.operator.post(url, {"position": "0"})
    body = confirm.content.decode()
    assert confirm.status_code == 200 and 'data-testid="replay-confirm"' in body
    assert re.search(r'data-testid="replay-count">.*<strong>12</strong>', body, re.S)
    assert group_record(board) == before and audit_entries(board) == []  # a preview changes nothing
    done = board.operator.post(url, {"position": "0", "confirmed": "on"}, follow=True)
    assert b"12 retained message(s) to receive" in done.content
    assert group_record(board)["cursor"] == {"0": -1, "1": -1}
    entry = audit_entries(board)[0]
    assert entry["action"] == "replay" and entry["count"] == 12 and entry["position"] == "0"
    assert entry["cursorBefore"] == before["cursor"]


def test_replay_from_a_time_counts_what_was_published_since(board: Board, orders: SeededTopic):
    url = reverse("oqronboard:group-replay", args=["orders", "billing"])
    body = board.operator.post(url, {"position": "2001-01-01T00:00:00Z"}).content.decode()
    assert re.search(r"<strong>12</strong>", body)
    sixth = orders.messages[orders.ids[6]]["publishedAt"]
    later = sorted(orders.messages[i]["publishedAt"] for i in orders.ids if orders.messages[i]["publishedAt"] >= sixth)
    from datetime import UTC, datetime

    at = datetime.fromtimestamp(sixth / 1000, tz=UTC).isoformat(timespec="milliseconds")
    body = board.operator.post(url, {"position": at}).content.decode()
    assert re.search(rf"<strong>{len(later)}</strong>", body)
    board.operator.post(url, {"position": "latest", "confirmed": "on"})
    newest = {str(p): max(m["offset"] for m in orders.messages.values() if m["partition"] == p) for p in (0, 1)}
    assert newest == {"0": 3, "1": 7}  # bob's four messages, alice's and carol's eight
    assert group_record(board)["cursor"] == newest
    assert audit_entries(board)[0]["count"] == 0


@pytest.mark.parametrize("position, text", [
    ("-1", "negative"), ("999", "past the topic"), ("soon", "Cannot replay"), ("2999-01-01T00:00", "future"),
    ("1969-12-31T00:00", "1970"), ("", "from"), ("x" * 41, "from"), ("NaN", "Cannot replay"),
])
def test_a_bad_replay_position_is_400_with_a_message(board: Board, orders: SeededTopic, position: str, text: str):
    before = group_record(board)
    for confirmed in ("", "on"):
        response = board.operator.post(reverse("oqronboard:group-replay", args=["orders", "billing"]),
                                       {"position": position, "confirmed": confirmed})
        assert response.status_code == 400, (position, response.status_code)
        assert text in response.content.decode(), (position, response.content.decode()[-600:])
    assert group_record(board) == before and audit_entries(board) == []


def test_retry_a_groups_dead_letters_up_to_the_render_time(board: Board, orders: SeededTopic):
    rendered = now_ms()
    for message_id in orders.ids[:3]:
        dead(board, orders, "billing", message_id, died=rendered - MINUTE)
    dead(board, orders, "billing", orders.ids[3], died=rendered + MINUTE)  # after the page was rendered
    dead(board, orders, "shipping", orders.ids[0], died=rendered - MINUTE)  # another group
    page = board.operator.get(reverse("oqronboard:topics")).content.decode()
    assert 'data-testid="retry-dead-orders-billing"' in page
    response = board.operator.post(reverse("oqronboard:group-retry-dead", args=["orders", "billing"]),
                                   {"rendered_at": rendered}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "Retried 3 of 3 dead letter(s)" in response.content.decode()
    for message_id in orders.ids[:3]:
        assert board.plane.get("queue_dlq:orders@billing", message_id) is None
        assert board.plane.get("queue_job:orders@billing", message_id).value["status"] == "waiting"
    assert board.plane.get("queue_dlq:orders@billing", orders.ids[3]) is not None
    assert board.plane.get("queue_dlq:orders@shipping", orders.ids[0]) is not None
    entry = audit_entries(board)[0]
    assert entry["action"] == "retry" and entry["idCount"] == 3
    assert sorted(entry["ids"]) == sorted(f"orders@billing/{i}" for i in orders.ids[:3])
    job_audit = board.plane.list(f"audit:job:orders@billing:{orders.ids[0]}").records
    assert job_audit and job_audit[0].value["action"] == "retry"


def test_retry_beyond_the_cap_is_a_tracked_operation_over_the_groups_queue(board: Board, orders: SeededTopic,
                                                                          monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(topic_actions, "ACTION_CAP", 2)  # 1,000: three dead letters stand for more
    rendered = now_ms()
    for message_id in orders.ids[:3]:
        dead(board, orders, "billing", message_id, died=rendered - MINUTE)
    dead(board, orders, "billing", orders.ids[3], died=rendered + MINUTE)  # after the page was rendered
    response = board.operator.post(reverse("oqronboard:group-retry-dead", args=["orders", "billing"]),
                                   {"rendered_at": rendered}, HTTP_HX_REQUEST="true")
    (op,) = Operations(board.scope.engine).list()[0]
    assert response.status_code == 200 and response["HX-Redirect"] == reverse("oqronboard:operation", args=[op.id])
    assert (op.action, op.queues, op.created_by) == ("retry", ("orders@billing",), board.users["operator"].username)
    OperationRunner(board.scope.engine, owner="test").drain()
    assert Operations(board.scope.engine).get(op.id).progress.done == 3
    for message_id in orders.ids[:3]:
        assert board.plane.get("queue_job:orders@billing", message_id).value["status"] == "waiting"
    assert board.plane.get("queue_dlq:orders@billing", orders.ids[3]) is not None
    entry = audit_entries(board)[0]
    assert entry["action"] == "operation-retry" and entry["operation"] == op.id and entry["ok"] is True


def test_retry_dead_needs_the_render_time(board: Board, orders: SeededTopic):
    for value in ("", "soon", "-5", "1" * 30):
        response = board.operator.post(reverse("oqronboard:group-retry-dead", args=["orders", "billing"]),
                                       {"rendered_at": value})
        assert response.status_code == 400 and b"rendered_at" in response.content


def test_unknown_topic_or_group_is_404(board: Board, orders: SeededTopic):
    for args in (["orders", "nobody"], ["nope", "billing"]):
        assert board.operator.post(reverse("oqronboard:group-pause", args=args)).status_code == 404
        assert board.operator.get(reverse("oqronboard:group-replay", args=args)).status_code == 404
        assert board.operator.post(reverse("oqronboard:group-retry-dead", args=args),
                                   {"rendered_at": "1"}).status_code == 404
    assert audit_entries(board) == []


def test_group_actions_refuse_get_and_need_csrf(board: Board, orders: SeededTopic):
    assert board.operator.get(reverse("oqronboard:group-pause", args=["orders", "billing"])).status_code == 405
    assert board.operator.get(reverse("oqronboard:group-retry-dead", args=["orders", "billing"])).status_code == 405
    user = get_user_model().objects.get(username__startswith="olivia-")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    url = reverse("oqronboard:group-pause", args=["orders", "billing"])
    assert client.post(url).status_code == 403
    page = client.get(reverse("oqronboard:topics")).content.decode()
    token = re.search(r'hx-headers=\'\{"X-CSRFToken": "([^"]+)"\}\'', page).group(1)
    assert client.post(url, HTTP_X_CSRFTOKEN=token, HTTP_HX_REQUEST="true").status_code == 200
    assert group_record(board)["paused"] is True


def test_an_offset_past_a_partitions_end_warns_of_what_it_would_skip(board: Board, orders: SeededTopic):
    # bob's four messages are partition 0 (offsets 0-3), alice's and carol's partition 1 (0-7).
    body = board.operator.post(reverse("oqronboard:group-replay", args=["orders", "billing"]),
                               {"position": "6"}).content.decode()
    assert re.search(r"<strong>2</strong>", body)  # partition 1's offsets 6 and 7
    assert 'data-testid="replay-skips"' in body and "skip offsets 4 to 5" in body


def test_the_live_panels_forms_lead_back_to_the_page_not_the_fragment(board: Board, orders: SeededTopic):
    fragment = board.operator.get(reverse("oqronboard:topics"), {"panel": "live"},
                                  HTTP_HX_REQUEST="true").content.decode()
    assert 'name="next" value="/topics/"' in fragment and "next=/topics/&quot;" not in fragment
    assert f'{reverse("oqronboard:group-replay", args=["orders", "billing"])}?next=/topics/"' in fragment
    response = board.operator.post(reverse("oqronboard:group-pause", args=["orders", "billing"]), {"next": "/topics/"})
    assert response.status_code == 302 and response["Location"] == "/topics/"


def test_another_scopes_topics_are_neither_shown_nor_acted_on(board: Board, orders: SeededTopic):
    from oqronboard.base.scope import BoardScope
    from oqronkit import Topic

    other = BoardScope(board.db.project + "-other", board.db.environment)
    Topic("secret", engine=other.engine).publish({"n": 1})
    groups.ensure(other.engine.durable, "secret", "spy", 1, "earliest")
    body = board.operator.get(reverse("oqronboard:topics")).content.decode()
    assert "secret" not in body and 'data-testid="topic-orders"' in body
    assert board.operator.get(reverse("oqronboard:topic-log", args=["secret"])).status_code == 404
    assert board.operator.post(reverse("oqronboard:group-pause", args=["secret", "spy"])).status_code == 404
    assert other.engine.durable.get("topic_groups:secret", "spy").value["paused"] is False
