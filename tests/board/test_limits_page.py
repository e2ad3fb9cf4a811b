"""The Limits page: every rate limiter of the scope with its tiers, ban and mode; a
key's usage (a peek, counting nothing); the operators' reset, unban, override and
clear-override of a key: audited, 403 for viewers, 400 on bad input, 404 for another
scope's limiter, the definition never rewritten."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from oqronboard.base.scope import BoardScope
from oqronkit.ratelimit import RateLimiter
from tests.board.seed import Board

HOSTILE = "<script>alert(1)</script>"


def declare(board: Board, name: str = "api", *, scope: BoardScope | None = None) -> RateLimiter:
    """A limiter as an app uses it: 2 per minute and 5 per hour, banned after 1 refusal."""
    limiter = RateLimiter(name, tiers=[(2, 60), (5, 3600)], ban=(1, 60, 600), engine=(scope or board.scope).engine)
    limiter.check("alice")
    return limiter


def audit_entries(board: Board) -> list[dict]:
    return sorted((r.value for r in board.plane.list("audit").records), key=lambda e: e["id"], reverse=True)


def usage(board: Board, client: Client | None = None, key: str = "alice") -> str:
    response = (client or board.viewer).get(reverse("oqronboard:limits"), {"limiter": "api", "key": key})
    assert response.status_code == 200
    return response.content.decode()


def test_the_page_shows_each_limiter_with_tiers_ban_and_mode(board: Board):
    assert 'data-testid="no-limiters"' in board.viewer.get(reverse("oqronboard:limits")).content.decode()
    declare(board)
    body = board.viewer.get(reverse("oqronboard:limits")).content.decode()
    assert 'data-testid="limiter-api"' in body and "2 per 1m 00s; 5 per 1h 00m" in body
    assert "after 1 refusals within 1m 00s, for 10m 00s" in body and "enforcing" in body
    live = board.viewer.get(reverse("oqronboard:limits") + "?panel=live", HTTP_HX_REQUEST="true").content.decode()
    assert 'data-testid="limiter-api"' in live and "<html" not in live


def test_a_keys_usage_is_a_peek_and_a_hostile_key_is_text(board: Board):
    limiter = declare(board)
    body = usage(board)
    assert 'data-testid="usage-remaining">1<' in body and 'data-testid="limit-reset"' not in body
    assert 'data-testid="usage-remaining">1<' in usage(board)  # nothing counted
    assert limiter.peek("alice").remaining == 1
    body = usage(board, key=HOSTILE)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body and HOSTILE not in body
    assert 'data-testid="limit-reset"' in usage(board, board.operator)


def test_reset_unban_override_and_clear_are_audited_and_act(board: Board):
    limiter = declare(board)
    limiter.check("alice")
    limiter.check("alice")  # refused: banned
    assert limiter.peek("alice").banned
    before = board.plane.get("ratelimit", "api").value
    url = reverse("oqronboard:limiter-action", args=["api", "unban"])
    response = board.operator.post(url, {"key": "alice"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and json.loads(response["HX-Trigger"]) == {"board:refresh": {}}
    assert not limiter.peek("alice").banned
    response = board.operator.post(reverse("oqronboard:limiter-action", args=["api", "reset"]), {"key": "alice"})
    assert response.status_code == 302 and response["Location"] == reverse("oqronboard:limits")
    assert limiter.peek("alice").remaining == 2
    board.operator.post(reverse("oqronboard:limiter-action", args=["api", "override"]), {"key": "alice",
                                                                                         "limits": "10, 20"})
    assert limiter.peek("alice").limit == 10
    board.operator.post(reverse("oqronboard:limiter-action", args=["api", "clear-override"]), {"key": "alice"})
    assert limiter.peek("alice").limit == 2
    entries = audit_entries(board)
    assert [e["action"] for e in entries] == ["ratelimit-clear-override", "ratelimit-override", "ratelimit-reset",
                                              "ratelimit-unban"]
    assert entries[1]["limits"] == [10, 20] and all(e["key"] == "alice" and e["limiter"] == "api" for e in entries)
    assert all(e["user"].startswith("olivia-") and e["ok"] for e in entries)
    assert board.plane.get("ratelimit", "api").value == before


def test_a_viewer_is_refused_every_action(board: Board):
    limiter = declare(board)
    for action in ("reset", "unban", "override", "clear-override"):
        url = reverse("oqronboard:limiter-action", args=["api", action])
        assert board.viewer.post(url, {"key": "alice", "limits": "9,9"}).status_code == 403
    assert limiter.peek("alice").remaining == 1 and audit_entries(board) == []


def test_another_scopes_limiter_is_neither_shown_nor_acted_on(board: Board):
    other = BoardScope(board.db.project + "-other", board.db.environment)
    spy = declare(board, "secret-limiter", scope=other)
    declare(board)
    assert "secret-limiter" not in board.viewer.get(reverse("oqronboard:limits")).content.decode()
    assert board.viewer.get(reverse("oqronboard:limits"), {"limiter": "secret-limiter",
                                                           "key": "alice"}).status_code == 404
    url = reverse("oqronboard:limiter-action", args=["secret-limiter", "reset"])
    assert board.operator.post(url, {"key": "alice"}).status_code == 404
    assert spy.peek("alice").remaining == 1 and audit_entries(board) == []


@pytest.mark.parametrize("action,data", [("reset", {}), ("reset", {"key": ""}), ("reset", {"key": "k" * 501}),
                                         ("override", {"key": "a", "limits": "5"}),
                                         ("override", {"key": "a", "limits": "x,y"}),
                                         ("override", {"key": "a", "limits": "0,5"})])
def test_bad_input_is_400_and_not_audited(board: Board, action: str, data: dict):
    declare(board)
    assert board.operator.post(reverse("oqronboard:limiter-action", args=["api", action]), data).status_code == 400
    assert audit_entries(board) == []


def test_unknown_limiter_action_or_bad_usage_query(board: Board):
    declare(board)
    assert board.operator.post(reverse("oqronboard:limiter-action", args=["api", "nuke"]),
                               {"key": "a"}).status_code == 404
    assert board.operator.post(reverse("oqronboard:limiter-action", args=["nope", "reset"]),
                               {"key": "a"}).status_code == 404
    assert board.operator.get(reverse("oqronboard:limiter-action", args=["api", "reset"])).status_code == 405
    assert board.viewer.get(reverse("oqronboard:limits"), {"limiter": "api", "key": ""}).status_code == 400
    assert board.viewer.get(reverse("oqronboard:limits"), {"limiter": "nope", "key": "a"}).status_code == 404


def test_actions_need_the_csrf_token(board: Board):
    declare(board)
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.get(username=f"olivia-{board.db.project[-6:]}"))
    assert client.post(reverse("oqronboard:limiter-action", args=["api", "reset"]), {"key": "alice"}).status_code == 403
    assert audit_entries(board) == []


def put_limited_queue(board: Board, name: str, *, rate=None, concurrency=None) -> None:
    from oqronkit.backends.claim_limits import ClaimLimits
    from oqronkit.clock import now_ms
    from oqronkit.queues.limits import limits_fields

    board.plane.put("queue", name, {"name": name, "paused": False, "concurrency": 5, "strategy": "fifo",
                                    "updatedAt": now_ms(), **limits_fields(ClaimLimits(concurrency, rate))})


def test_queue_limits_show_with_their_held_back_claims(board: Board):
    from oqronkit.backends.claim_limits import ClaimLimits
    from oqronkit.backends.hot_types import Signal
    from oqronkit.clock import now_ms

    body = board.viewer.get(reverse("oqronboard:limits")).content.decode()
    assert 'data-testid="no-queue-limits"' in body
    put_limited_queue(board, "capped", concurrency=1)
    put_limited_queue(board, "paced", rate=(3, 500))
    put_limited_queue(board, "both", rate=(10, 60_000), concurrency=4)
    put_limited_queue(board, "unlimited")
    hot, now = board.scope.engine.hot, now_ms()
    hot.signal("capped", [Signal("a"), Signal("b")], now)
    for _ in range(3):  # one taken, then held back three times: the first claim was cut short too
        hot.claim_limited("capped", worker_id="w", limit=2, lease_ms=30_000, now=now, limits=ClaimLimits(1))
    body = board.viewer.get(reverse("oqronboard:limits")).content.decode()
    assert 'data-testid="queue-limit-unlimited"' not in body
    assert "3 starts per 500 ms" in body and "10 starts per 1m 00s" in body and "4 at once" in body
    row = body[body.index('data-testid="queue-limit-capped"'):]
    row = row[:row.index("</tr>")]
    assert "1 at once" in row and 'data-testid="queue-held">3 claims<' in row
    live = board.viewer.get(reverse("oqronboard:limits") + "?panel=live", HTTP_HX_REQUEST="true").content.decode()
    assert 'data-testid="queue-limit-paced"' in live and "<html" not in live


def test_a_hostile_queue_name_is_text_and_another_scopes_queue_is_not_shown(board: Board):
    from oqronkit.clock import now_ms

    put_limited_queue(board, HOSTILE, concurrency=2)
    other = BoardScope(board.db.project + "-other", board.db.environment)
    other.engine.durable.put("queue", "secret-queue", {"name": "secret-queue", "globalConcurrency": 2,
                                                      "updatedAt": now_ms()})
    body = board.viewer.get(reverse("oqronboard:limits")).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body and HOSTILE not in body
    assert "secret-queue" not in body
