"""What a new user found on the board (issue 37, item 7): webhook delivery queues
counted like any queue, no Remove for a queue a live worker consumes, 404 for an
unknown queue in the API, limits and caches in human durations."""

from __future__ import annotations

from django.urls import reverse

from oqronkit.caches import Cache
from oqronkit.clock import now_ms
from oqronkit.live import publish_worker
from oqronkit.ratelimit import RateLimiter
from tests.board.seed import Board, put_runs, queue_control, run_value


def test_webhook_delivery_queues_count_their_runs(board: Board):
    put_runs(board.plane, [
        run_value("wh-ok-1", name="webhook/orders", module="webhook"),
        run_value("wh-ok-2", name="webhook/orders", module="webhook"),
        run_value("wh-bad", name="webhook/orders", module="webhook", status="failed"),
    ])
    queues = board.viewer.get(reverse("oqronboard:api-queues")).json()["queues"]
    row = next(q for q in queues if q["name"] == "webhook/orders")
    assert (row["completed"], row["failed"]) == (2, 1)
    home = board.viewer.get(reverse("oqronboard:home")).content.decode()
    assert reverse("oqronboard:queue-jobs", args=["webhook/orders"]) in home


def test_the_api_answers_404_for_a_queue_it_has_never_seen(board: Board):
    response = board.viewer.get(reverse("oqronboard:api-queue", args=["no-such-queue"]))
    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert "No queue" in response.json()["error"]
    # Seen through its runs alone (every job completed and left), or a live consumer: 200.
    put_runs(board.plane, [run_value("done-1", name="reports")])
    assert board.viewer.get(reverse("oqronboard:api-queue", args=["reports"])).status_code == 200
    publish_worker(board.scope.engine.hot, {"id": "w-fresh", "queues": {"brand-new": 1}, "heartbeatAt": now_ms()})
    assert board.viewer.get(reverse("oqronboard:api-queue", args=["brand-new"])).status_code == 200


def test_a_queue_a_live_worker_consumes_is_never_offered_for_removal(board: Board):
    queue_control(board.plane, "consumed")
    queue_control(board.plane, "abandoned")
    publish_worker(board.scope.engine.hot, {"id": "w-1", "queues": {"consumed": 2}, "heartbeatAt": now_ms()})
    body = board.operator.get(reverse("oqronboard:definitions")).content.decode()
    assert 'data-testid="remove-abandoned"' in body and 'data-testid="remove-consumed"' not in body
    stale = {d["id"]: d["stale"] for d in board.viewer.get(reverse("oqronboard:api-definitions")).json()["definitions"]
             if d["namespace"] == "queue"}
    assert stale == {"consumed": False, "abandoned": True}
    # A crafted POST is refused too, audited, and the record stays.
    board.operator.post(reverse("oqronboard:queue-remove", args=["consumed"]))
    assert board.plane.get("queue", "consumed") is not None
    audit = board.operator.get(reverse("oqronboard:audit")).content.decode()
    assert "Queue consumed is consumed by a live worker; its record stays." in audit


def test_limits_and_caches_show_durations_in_data_tables(board: Board):
    engine = board.scope.engine
    RateLimiter("api-calls", tiers=[(50, 120)], engine=engine).check("k")
    Cache("users", ttl=90, engine=engine).get("u1")
    limits = board.viewer.get(reverse("oqronboard:limits")).content.decode()
    assert '<table class="data" data-testid="limiters">' in limits
    assert "50 per 2m 00s" in limits and "120000 ms" not in limits
    caches = board.viewer.get(reverse("oqronboard:caches")).content.decode()
    assert '<table class="data" data-testid="caches">' in caches and "<td>1m 30s</td>" in caches
    assert "90000 ms" not in caches
