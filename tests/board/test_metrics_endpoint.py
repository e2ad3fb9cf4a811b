"""``/metrics``: the board's gauges checked against known seeded state (SQLite and
Postgres), who may scrape (anonymous, viewer, the permission, the token), and the
scrape's bounded query count."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from prometheus_client.parser import text_string_to_metric_families

from oqronboard.checks import check_metrics_token
from oqronkit.clock import now_ms
from oqronkit.live import publish_worker
from oqronkit.services.leader import LEADER_LOCK
from tests.board import topic_seed, webhook_seed
from tests.board.seed import MINUTE, Board, dead_job, job_value, put_jobs, queue_control
from tests.board.test_schedules_page import declare, set_state

TOKEN = "prometheus-scrapes-with-this-token-0123"


def scrape(client: Client, **headers: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get(reverse("oqronboard:metrics"), **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.content.decode()) for sample in family.samples}


def value(samples: dict, metric: str, /, **labels: str) -> float | None:
    return samples.get((metric, tuple(sorted(labels.items()))))


def seed(board: Board) -> int:
    now = now_ms()
    queue_control(board.plane, "emails", paused=True)
    queue_control(board.plane, "sms")
    emails = board.scope.queue("emails")
    emails.add_bulk([{"n": i} for i in range(4)])
    emails.add({"n": 5}, delay=600)
    put_jobs(board.plane, [job_value("emails", "old-waiting", created=now - 90 * MINUTE),
                           dead_job("emails", "d1"), dead_job("payments", "d2"), dead_job("payments", "d3")])
    hot = board.scope.engine.hot
    publish_worker(hot, {"id": "w-1", "queues": {"emails": 5, "sms": 2}, "heartbeatAt": now})
    publish_worker(hot, {"id": "w-2", "queues": {"sms": 2}, "heartbeatAt": now})
    hot.acquire_lock(LEADER_LOCK, "w-1", ttl_ms=60_000, now=now)
    declare(board, "cron", "nightly", expression="0 3 * * *")
    set_state(board, "cron", "nightly", nextRunAt=now - 30_000)
    declare(board, "cron", "ticker", every=30)
    set_state(board, "cron", "ticker", paused=True, nextRunAt=now - 600_000)
    orders = topic_seed.publish(board, "orders", count=12)
    topic_seed.group(board, orders, "billing", handed=5)
    topic_seed.group(board, orders, "audit", handed=12, paused=True)
    topic_seed.dead(board, orders, "billing", orders.ids[0])
    hook = webhook_seed.declare(board, "shop-events", endpoints=("shop", "crm"))
    webhook_seed.breaker(board, hook, "crm", "open")
    return now


def test_the_gauges_match_the_seeded_state(board: Board, settings):
    settings.OQRON_METRICS_TOKEN = TOKEN
    now = seed(board)
    samples = scrape(Client(), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert value(samples, "oqron_queue_jobs", queue="emails", state="waiting") == 4  # signalled in the hot plane
    assert value(samples, "oqron_queue_jobs", queue="emails", state="delayed") == 1
    assert value(samples, "oqron_queue_jobs", queue="emails", state="active") == 0
    assert value(samples, "oqron_queue_dead_letters", queue="emails") == 1
    assert value(samples, "oqron_queue_dead_letters", queue="payments") == 2
    assert value(samples, "oqron_queue_dead_letters", queue="sms") == 0
    oldest = value(samples, "oqron_queue_oldest_waiting_age_seconds", queue="emails")
    assert oldest is not None and 90 * 60 <= oldest < 90 * 60 + (now_ms() - now) / 1000 + 5
    assert value(samples, "oqron_queue_oldest_waiting_age_seconds", queue="sms") == 0
    assert value(samples, "oqron_queue_paused", queue="emails") == 1
    assert value(samples, "oqron_queue_paused", queue="sms") == 0
    assert value(samples, "oqron_workers") == 2
    assert value(samples, "oqron_queue_workers", queue="sms") == 2
    assert value(samples, "oqron_queue_workers", queue="emails") == 1
    assert value(samples, "oqron_leader_present") == 1
    lag = value(samples, "oqron_schedule_lag_seconds", kind="cron", name="nightly")
    assert lag is not None and 30 <= lag < 60
    assert value(samples, "oqron_schedule_lag_seconds", kind="cron", name="ticker") == 0  # paused: not late
    assert value(samples, "oqron_schedule_paused", kind="cron", name="ticker") == 1
    assert value(samples, "oqron_topic_group_lag_messages", topic="orders", group="billing") == 7
    assert value(samples, "oqron_topic_group_lag_messages", topic="orders", group="audit") == 0
    assert value(samples, "oqron_topic_group_dead_letters", topic="orders", group="billing") == 1
    assert value(samples, "oqron_topic_group_paused", topic="orders", group="audit") == 1
    assert value(samples, "oqron_webhook_breaker_state", webhook="shop-events", endpoint="crm", state="open") == 1
    assert value(samples, "oqron_webhook_breaker_state", webhook="shop-events", endpoint="crm", state="closed") == 0
    assert value(samples, "oqron_webhook_breaker_state", webhook="shop-events", endpoint="shop", state="closed") == 1
    assert value(samples, "oqron_webhook_endpoint_enabled", webhook="shop-events", endpoint="shop") == 1
    assert value(samples, "oqron_up", plane="durable") == 1 and value(samples, "oqron_up", plane="hot") == 1
    for section in ("queues", "workers", "schedules", "topics", "webhooks"):
        assert value(samples, "oqron_scrape_section_ok", section=section) == 1, section

    board.scope.engine.hot.release_lock(LEADER_LOCK, "w-1")
    assert value(scrape(Client(), HTTP_AUTHORIZATION=f"Bearer {TOKEN}"), "oqron_leader_present") == 0


def test_the_scrape_costs_a_fixed_number_of_queries(board: Board, settings):
    """Seven statements whatever the data (tests/board/test_plans.py holds their plans)."""
    settings.OQRON_METRICS_TOKEN = TOKEN
    seed(board)
    client = Client()
    with CaptureQueriesContext(connections[board.db.alias]) as queries:
        scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert len(queries) <= 7, [q["sql"][:120] for q in queries]
    assert not any("oqron_runs" in q["sql"] for q in queries)  # the run history is never read


def test_an_empty_scope_scrapes_without_error(board: Board, settings):
    settings.OQRON_METRICS_TOKEN = TOKEN
    samples = scrape(Client(), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert value(samples, "oqron_workers") == 0 and value(samples, "oqron_leader_present") == 0


@pytest.mark.django_db
def test_anonymous_and_a_wrong_or_short_token_get_401_and_no_figure(settings):
    url = reverse("oqronboard:metrics")
    response = Client().get(url)
    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")
    assert b"oqron_" not in response.content
    settings.OQRON_METRICS_TOKEN = TOKEN
    for header in ("Bearer nope", f"Bearer {TOKEN}x", f"Basic {TOKEN}", "Bearer "):
        response = Client().get(url, HTTP_AUTHORIZATION=header)
        assert response.status_code == 401 and b"oqron_" not in response.content, header
    settings.OQRON_METRICS_TOKEN = "short-token"  # under 20 characters: never a credential
    response = Client().get(url, HTTP_AUTHORIZATION="Bearer short-token")
    assert response.status_code == 401


def test_a_viewer_needs_the_permission(board: Board):
    response = board.viewer.get(reverse("oqronboard:metrics"))
    assert response.status_code == 403 and b"oqron_" not in response.content
    user = get_user_model().objects.create_user(f"prom-{board.db.project[-6:]}", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="view_metrics", content_type__app_label="oqronboard"))
    client = Client()
    client.force_login(user)
    try:
        assert value(scrape(client), "oqron_up", plane="durable") == 1
    finally:
        client.logout()
        user.delete()


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["memory", "redis"])
def test_without_a_sql_durable_plane_it_answers_503(settings, mode):
    settings.OQRON = {"MODE": mode, "REDIS_URL": "redis://127.0.0.1:6379/15"} if mode == "redis" else {"MODE": mode}
    settings.OQRON_METRICS_TOKEN = TOKEN
    response = Client().get(reverse("oqronboard:metrics"), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 503 and b"oqron_" not in response.content


@pytest.mark.parametrize(("token", "errors"), [("", []), (TOKEN, []), ("short-token", ["oqron.metrics.E001"]),
                                              (12345, ["oqron.metrics.E001"])])
def test_a_token_too_short_fails_the_system_check(settings, token, errors):
    settings.OQRON_METRICS_TOKEN = token
    assert [e.id for e in check_metrics_token()] == errors


def test_a_hot_plane_down_leaves_the_durable_figures(board: Board, settings):
    if board.db.alias == "default":
        pytest.skip("in sqlite mode the hot plane is the database itself")
    from tests.dedicated import free_port

    settings.OQRON_METRICS_TOKEN = TOKEN
    put_jobs(board.plane, [dead_job("emails", "d1")])
    settings.OQRON = {**settings.OQRON, "MODE": "redis-postgres", "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
                      "BACKEND_WAIT": 0.2}
    samples = scrape(Client(), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert value(samples, "oqron_up", plane="hot") == 0 and value(samples, "oqron_up", plane="durable") == 1
    assert value(samples, "oqron_queue_dead_letters", queue="emails") == 1  # read before the hot plane failed
    assert not any(name == "oqron_queue_jobs" for name, _ in samples)
    assert value(samples, "oqron_scrape_section_ok", section="workers") == 0
    assert value(samples, "oqron_scrape_section_ok", section="schedules") == 1


def test_the_hot_figures_come_from_redis_in_redis_postgres_mode(board: Board, settings):
    if board.db.alias == "default":
        pytest.skip("redis-postgres keeps its durable plane on Postgres")
    from oqronkit.contrib.django import engine
    from tests.services import drop_redis_project, require_redis

    url = require_redis()
    settings.OQRON_METRICS_TOKEN = TOKEN
    settings.OQRON = {**settings.OQRON, "MODE": "redis-postgres", "REDIS_URL": url}
    try:
        queue_control(engine.get_durable(), "emails")  # board.plane was the postgres mode's, closed by the change
        board.scope.queue("emails").add_bulk([{"n": i} for i in range(3)])
        board.scope.queue("emails").add({"n": 9}, delay=600)
        publish_worker(board.scope.engine.hot, {"id": "w-9", "queues": {"emails": 1}, "heartbeatAt": now_ms()})
        samples = scrape(Client(), HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert value(samples, "oqron_queue_jobs", queue="emails", state="waiting") == 3
        assert value(samples, "oqron_queue_jobs", queue="emails", state="delayed") == 1
        assert value(samples, "oqron_workers") == 1 and value(samples, "oqron_up", plane="hot") == 1
    finally:
        engine.reset()
        drop_redis_project(url, board.db.project)


def test_the_scrape_takes_the_depths_a_board_keeps_counted_and_never_asks_for_them(board: Board, settings):
    from oqronkit.services.kept_depths import keep_depths

    settings.OQRON_METRICS_TOKEN, settings.OQRON_BOARD_CACHE_SECONDS = TOKEN, 30
    seed(board)
    hot = board.scope.engine.hot
    auth = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    scrape(Client(), **auth)
    assert keep_depths(hot) == 0  # a scrape alone counted itself: the leader was not asked
    board.viewer.get(reverse("oqronboard:home"))  # a board asks
    assert keep_depths(hot) > 0
    board.scope.queue("emails").add({"n": 6})  # after the leader counted: the kept figure says 4
    samples = scrape(Client(), **auth)
    assert value(samples, "oqron_queue_jobs", queue="emails", state="waiting") == 4
