"""Django's cache for the board: django-redis on the engine's Redis in the Redis modes
(local memory otherwise), and the overview's queries shared by every viewer's poll for
a few seconds, so 20 viewers polling cost the database what one viewer does; an
operator's action makes the next poll fresh."""

from __future__ import annotations

import uuid

import redis
from django.contrib.auth import get_user_model
from django.db import connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from oqronboard import standalone
from tests.board.seed import Board, queue_control

REDIS_URL = "redis://127.0.0.1:6379/0"


def engine_queries(board: Board, polls: list[Client]) -> int:
    """The queries on the engine's tables that ``polls`` live-panel requests make."""
    with CaptureQueriesContext(connections[board.db.alias]) as captured:
        for client in polls:
            response = client.get(reverse("oqronboard:home"), {"panel": "live"}, HTTP_HX_REQUEST="true")
            assert response.status_code == 200 and 'data-testid="queue-row-emails"' in response.content.decode()
    return sum("oqron_" in q["sql"] for q in captured.captured_queries)


def test_twenty_viewers_polling_cost_the_database_one_viewers_queries(board: Board, settings):
    queue_control(board.plane, "emails")
    viewer = get_user_model().objects.get(username__startswith="victor-")
    viewers = [Client() for _ in range(20)]
    for client in viewers:
        client.force_login(viewer)
    settings.OQRON_BOARD_CACHE_SECONDS = 0
    viewers[0].get(reverse("oqronboard:home"))  # the first request opens the engine's planes
    one_viewer = engine_queries(board, viewers[:1])
    assert one_viewer >= 3  # queue states, dead-letter depths, the last hour
    assert engine_queries(board, viewers) == 20 * one_viewer  # unshared: each poll pays
    settings.OQRON_BOARD_CACHE_SECONDS = 30
    assert engine_queries(board, viewers) == one_viewer  # shared: the first poll pays for all


def test_an_operators_action_makes_the_next_poll_fresh(board: Board, settings):
    settings.OQRON_BOARD_CACHE_SECONDS = 30
    queue_control(board.plane, "emails")
    live = {"panel": "live"}
    assert "paused</span>" not in board.viewer.get(reverse("oqronboard:home"), live,
                                                   HTTP_HX_REQUEST="true").content.decode()
    board.plane.put("queue", "emails", {**board.plane.get("queue", "emails").value, "paused": True})
    # A worker's change shows within the sharing's seconds; this one is still shared.
    assert "paused</span>" not in board.viewer.get(reverse("oqronboard:home"), live,
                                                   HTTP_HX_REQUEST="true").content.decode()
    assert board.operator.post(reverse("oqronboard:queue-resume", args=["emails"])).status_code in (200, 302)
    assert board.operator.post(reverse("oqronboard:queue-pause", args=["emails"])).status_code in (200, 302)
    assert "paused</span>" in board.viewer.get(reverse("oqronboard:home"), live,
                                               HTTP_HX_REQUEST="true").content.decode()


def test_the_redis_modes_cache_in_the_engines_redis_under_the_boards_prefix(settings):
    # The standalone project's CACHES, from its environment.
    for mode in ("redis", "redis-postgres"):
        found = standalone.cache({"OQRON_MODE": mode, "OQRON_REDIS_URL": REDIS_URL})
        assert found["BACKEND"] == "django_redis.cache.RedisCache" and found["LOCATION"] == REDIS_URL
        assert found["KEY_PREFIX"] == "oqronboard"
    for environ in ({"OQRON_MODE": "sqlite"}, {"OQRON_MODE": "postgres"}, {"OQRON_MODE": "bogus"},
                    {"OQRON_BACKEND_WAIT": "soon", "OQRON_MODE": "redis", "OQRON_REDIS_URL": REDIS_URL}):
        assert standalone.cache(environ)["BACKEND"].endswith("LocMemCache")
    settings.CACHES = {"default": standalone.cache({"OQRON_MODE": "redis", "OQRON_REDIS_URL": REDIS_URL})}
    from django.core.cache import caches

    key = f"probe-{uuid.uuid4().hex}"
    caches["default"].set(key, {"n": 1}, timeout=30)
    try:
        assert caches["default"].get(key) == {"n": 1}
        assert redis.Redis.from_url(REDIS_URL).exists(f"oqronboard:1:{key}") == 1  # the prefix, version 1
    finally:
        caches["default"].delete(key)
