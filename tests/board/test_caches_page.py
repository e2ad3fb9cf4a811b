"""The Caches page: every declared cache of the scope with its options and statistics
(live), and the operators' invalidation by tag or prefix: audited, 403 for viewers,
400 on bad input, 404 for another scope's cache."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from oqronboard.base.scope import BoardScope
from oqronkit.caches import Cache
from tests.board.seed import Board

HOSTILE = "<script>alert(1)</script>"


def declare(board: Board, name: str = "users", *, scope: BoardScope | None = None) -> Cache:
    """A cache as an app process declares and uses it: 2 hits, 1 miss, statistics flushed."""
    cache = Cache(name, ttl=60, stale_while_revalidate=5, tags=["people", HOSTILE],
                  engine=(scope or board.scope).engine)
    cache.set("user:1", {"n": 1})
    cache.get("user:1")
    cache.get("user:1")
    cache.get("user:2")
    cache.stats_counters.flush()
    return cache


def audit_entries(board: Board) -> list[dict]:
    return sorted((r.value for r in board.plane.list("audit").records), key=lambda e: e["id"], reverse=True)


def test_the_page_shows_each_cache_with_options_and_stats(board: Board):
    declare(board)
    response = board.viewer.get(reverse("oqronboard:caches"))
    assert response.status_code == 200
    body = response.content.decode()
    assert 'data-testid="cache-users"' in body and "<td>1m 00s</td>" in body
    assert 'data-testid="hits-users">2<' in body and 'data-testid="misses-users">1<' in body
    assert 'data-testid="ratio-users">66.7%<' in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body and HOSTILE not in body
    assert 'data-testid="invalidate-users"' not in body  # viewers see no actions
    assert 'data-testid="invalidate-users"' in board.operator.get(reverse("oqronboard:caches")).content.decode()


def test_the_live_fragment_and_the_empty_page(board: Board):
    body = board.viewer.get(reverse("oqronboard:caches")).content.decode()
    assert 'data-testid="no-caches"' in body
    declare(board)
    live = board.viewer.get(reverse("oqronboard:caches") + "?panel=live", HTTP_HX_REQUEST="true")
    text = live.content.decode()
    assert live.status_code == 200 and 'data-testid="cache-users"' in text and "<html" not in text


def test_another_scopes_caches_are_neither_shown_nor_invalidated(board: Board):
    other = BoardScope(board.db.project + "-other", board.db.environment)
    spy = declare(board, "secret-cache", scope=other)
    declare(board)
    body = board.viewer.get(reverse("oqronboard:caches")).content.decode()
    assert "secret-cache" not in body and 'data-testid="cache-users"' in body
    url = reverse("oqronboard:cache-invalidate", args=["secret-cache"])
    assert board.operator.post(url, {"by": "tag", "value": "people"}).status_code == 404
    assert spy.get("user:1") == {"n": 1} and audit_entries(board) == []


def test_a_viewer_is_refused_and_nothing_changes(board: Board):
    cache = declare(board)
    response = board.viewer.post(reverse("oqronboard:cache-invalidate", args=["users"]), {"by": "tag",
                                                                                          "value": "people"})
    assert response.status_code == 403
    assert cache.get("user:1") == {"n": 1} and audit_entries(board) == []


def test_invalidate_by_tag_is_audited_and_reaches_the_entries(board: Board):
    cache = declare(board)
    before = board.plane.get("cache", "users").value
    response = board.operator.post(reverse("oqronboard:cache-invalidate", args=["users"]), {"by": "tag",
                                                                                            "value": "people"},
                                   HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and json.loads(response["HX-Trigger"]) == {"board:refresh": {}}
    assert "invalidated" in response.content.decode()
    assert cache.get("user:1") is None
    entry = audit_entries(board)[0]
    assert entry["action"] == "invalidate-tag" and entry["cache"] == "users" and entry["tag"] == "people"
    assert entry["ok"] is True and entry["user"].startswith("olivia-")
    assert board.plane.get("cache", "users").value == before  # the definition is never rewritten


def test_invalidate_by_prefix_without_htmx_redirects_back(board: Board):
    cache = declare(board)
    cache.set("team:1", {"t": 1})
    response = board.operator.post(reverse("oqronboard:cache-invalidate", args=["users"]), {"by": "prefix",
                                                                                            "value": "user:"})
    assert response.status_code == 302 and response["Location"] == reverse("oqronboard:caches")
    assert cache.get("user:1") is None and cache.get("team:1") == {"t": 1}
    assert audit_entries(board)[0]["action"] == "invalidate-prefix"


@pytest.mark.parametrize("data", [{"by": "prefix", "value": "user"}, {"by": "tag", "value": ""},
                                  {"by": "key", "value": "x"}, {}, {"by": "tag", "value": "x" * 501},
                                  {"by": "tag", "value": "a\x00b"}])
def test_bad_input_is_400_and_not_audited(board: Board, data: dict):
    declare(board)
    response = board.operator.post(reverse("oqronboard:cache-invalidate", args=["users"]), data)
    assert response.status_code == 400
    if data.get("value") == "user":
        assert "a prefix must end with" in response.content.decode()
    assert audit_entries(board) == []


def test_an_unknown_cache_is_404_and_get_is_405(board: Board):
    response = board.operator.post(reverse("oqronboard:cache-invalidate", args=["nope"]), {"by": "tag", "value": "t"})
    assert response.status_code == 404
    assert board.operator.get(reverse("oqronboard:cache-invalidate", args=["users"])).status_code == 405


def test_actions_need_the_csrf_token(board: Board):
    from django.contrib.auth import get_user_model
    from django.test import Client

    declare(board)
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.get(username=f"olivia-{board.db.project[-6:]}"))
    response = client.post(reverse("oqronboard:cache-invalidate", args=["users"]), {"by": "tag", "value": "people"})
    assert response.status_code == 403 and audit_entries(board) == []
