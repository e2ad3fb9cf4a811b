"""The Plane drift page and /api/v1/planes/: the drift of the board's scope only, live;
operators run the reconciler (audited, CSRF, 403 for viewers) and the page is clean
again. On the sqlite and postgres modes, whose hot tables lose entries like Redis."""

from __future__ import annotations

import json
import time

from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from oqronboard.base.scope import BoardScope
from oqronkit.clock import now_ms
from tests.board.seed import Board
from tests.lost_jobs import lose_from_hot

HOSTILE = "<b>q</b>"


def lose_jobs(scope: BoardScope, queue: str, n: int) -> list[str]:
    """Jobs stored long ago (past the grace) whose hot entries are gone, as after a flush,
    in a queue a worker recorded."""
    engine = scope.engine
    engine.durable.put("queue", queue, {"name": queue, "paused": False, "concurrency": 1, "strategy": "fifo",
                                        "leaseMs": 30_000, "updatedAt": now_ms()})
    return lose_from_hot(engine, queue, n)


def audit_entries(board: Board) -> list[dict]:
    return [r.value for r in board.plane.list("audit").records]


def wait_clean(client: Client, timeout: float = 15.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        data = json.loads(client.get(reverse("oqronboard:api-planes")).content)
        if (data["clean"] and not data["reconcile_running"]) or time.monotonic() > deadline:
            return data
        time.sleep(0.1)


def test_the_page_shows_the_drift_and_the_operator_repairs_it(board: Board):
    lost = lose_jobs(board.scope, "mail", 3)
    body = board.viewer.get(reverse("oqronboard:planes")).content.decode()
    assert 'data-testid="planes-drift"' in body
    assert 'data-testid="unsignalled-mail">3' in body and lost[0] in body
    assert 'data-testid="reconcile-now"' not in body  # viewers see no action
    assert board.viewer.post(reverse("oqronboard:planes-reconcile")).status_code == 403
    overview = board.viewer.get(reverse("oqronboard:home")).content.decode()
    assert f'href="{reverse("oqronboard:planes")}" data-testid="planes-link"' in overview
    operator_page = board.operator.get(reverse("oqronboard:planes")).content.decode()
    assert 'data-testid="reconcile-now"' in operator_page
    response = board.operator.post(reverse("oqronboard:planes-reconcile"), HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "Reconciler started" in response.content.decode()
    data = wait_clean(board.viewer)
    assert data["clean"], data
    assert board.scope.engine.hot.present("mail", lost) == set(lost)
    repair = data["repairs"][0]
    assert repair["manual"] and repair["by"] == f"board:olivia-{board.db.project[-6:]}"
    assert repair["repaired"] == {"signalled": 3} and {j["job"] for j in repair["jobs"]} == set(lost)
    page = board.viewer.get(reverse("oqronboard:planes")).content.decode()
    assert 'data-testid="planes-clean"' in page and 'data-testid="repairs"' in page
    [entry] = [e for e in audit_entries(board) if e["action"] == "reconcile"]
    assert entry["ok"] is True and entry["source"] == "board"


def test_the_api_shows_the_same_and_its_reconcile_is_for_operators(board: Board):
    lost = lose_jobs(board.scope, HOSTILE, 2)
    data = json.loads(board.viewer.get(reverse("oqronboard:api-planes")).content)
    [row] = data["queues"]
    # Two adds in one millisecond get ids in no particular order: the drift's sample lists them by id.
    assert row["queue"] == HOSTILE and row["unsignalled"]["count"] == 2
    assert sorted(row["unsignalled"]["ids"]) == sorted(lost)
    assert data["clean"] is False and data["cost"]["calls"] > 0 and data["sample"] == 200
    assert set(data["last_passes"]) == {"reconcile", "rescue"}
    assert board.viewer.post(reverse("oqronboard:api-planes-reconcile")).status_code == 403
    answer = json.loads(board.operator.post(reverse("oqronboard:api-planes-reconcile")).content)
    assert answer["ok"] is True
    assert wait_clean(board.viewer)["clean"]
    assert [e["source"] for e in audit_entries(board) if e["action"] == "reconcile"] == ["api"]
    page = board.viewer.get(reverse("oqronboard:planes")).content.decode()
    assert "&lt;b&gt;q&lt;/b&gt;" in page and HOSTILE not in page


def test_the_reconcile_action_needs_the_csrf_token(board: Board):
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.get(username=f"olivia-{board.db.project[-6:]}"))
    assert client.post(reverse("oqronboard:planes-reconcile")).status_code == 403
    assert client.post(reverse("oqronboard:api-planes-reconcile")).status_code == 403
    assert audit_entries(board) == []


def test_another_scopes_drift_is_not_shown_and_the_live_fragment(board: Board):
    other = BoardScope(board.db.project + "-other", board.db.environment)
    lose_jobs(other, "secret-queue", 1)
    body = board.viewer.get(reverse("oqronboard:planes")).content.decode()
    assert "secret-queue" not in body and 'data-testid="planes-clean"' in body
    live = board.viewer.get(reverse("oqronboard:planes") + "?panel=live", HTTP_HX_REQUEST="true")
    text = live.content.decode()
    assert live.status_code == 200 and 'data-testid="service-passes"' in text and "<html" not in text
    assert "secret-queue" not in board.viewer.get(reverse("oqronboard:api-planes")).content.decode()
