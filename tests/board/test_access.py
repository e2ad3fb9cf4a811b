"""Safe by default: a login on every URL, operators only for actions, CSRF, CSP."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from oqronkit import classify_namespace
from tests.board.seed import Board, dead_job, job_value, put_jobs, queue_control

# Open by design: the login form, logout (which only ends a session), the health probes, the icon.
PUBLIC = {"login", "logout", "admin-login", "health-live", "health-ready", "favicon"}
SAMPLE = {"queue": "emails", "job_id": "job-1", "run_id": "run-1", "action": "retry", "app_label": "oqronboard",
          "object_id": "1", "content_type_id": "1", "url": "x", "model_name": "jobrecord", "id": "1",
          "topic": "orders", "group": "billing", "message_id": "m1", "webhook": "billing", "endpoint": "crm",
          "delivery_id": "m1-crm", "cache": "users", "limiter": "api", "rest": "nope", "group_id": "g1",
          "op_id": "op-1", "verb": "pause", "correlation_id": "order-1", "set_id": "s1", "name": "emails"}


def walk(patterns, namespace: str = "", prefix: str = "") -> list[tuple[str, str, URLPattern]]:
    """Every URL pattern: its namespaced name, the route leading to it, the pattern."""
    found = []
    for entry in patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            found += walk(entry.url_patterns, inner, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            found.append((f"{namespace}{entry.name}" if entry.name else "", prefix, entry))
    return found


def every_url() -> list[str]:
    """A concrete URL for every pattern, sample values filling its arguments (named
    patterns through reverse(); the admin's few unnamed ones from their route)."""
    urls = []
    for name, prefix, pattern in walk(get_resolver().url_patterns):
        keys = list(pattern.pattern.regex.groupindex)
        if name:
            if name.rpartition(":")[2] in PUBLIC:
                continue
            urls.append(reverse(name, kwargs={k: SAMPLE[k] for k in keys}))
            continue
        route = prefix + str(pattern.pattern)
        route = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: SAMPLE[m.group(1)], route)
        route = re.sub(r"\^?\(\?P<(\w+)>[^)]*\)\$?", lambda m: SAMPLE[m.group(1)], route)
        urls.append("/" + route)
    return sorted(set(urls))


def test_the_walk_covers_every_board_page():
    urls = every_url()
    for name in ("/", "/runs/", "/runs/failed/", "/runs/run-1/", "/runs/run-1/live/", "/jobs/", "/jobs/emails/",
                 "/jobs/emails/job-1/", "/jobs/emails/job-1/retry/", "/dead/", "/dead/retry/", "/dead/delete/",
                 "/dead/export/", "/definitions/", "/definitions/queues/emails/pause/", "/audit/", "/go/",
                 "/scope/", "/admin/", "/operations/", "/operations/op-1/pause/",
                 "/topics/", "/topics/orders/", "/topics/orders/messages/m1/",
                 "/topics/orders/groups/billing/pause/", "/topics/orders/groups/billing/replay/",
                 "/topics/orders/groups/billing/retry-dead/", "/webhooks/", "/webhooks/deliveries/",
                 "/webhooks/deliveries/resend/", "/webhooks/billing/deliveries/m1-crm/",
                 "/webhooks/billing/deliveries/m1-crm/resend/", "/webhooks/billing/endpoints/crm/enable/",
                 "/webhooks/billing/endpoints/crm/disable/", "/logs/",
                 "/caches/", "/caches/users/invalidate/", "/limits/", "/limits/api/retry/", "/api/v1/queues/",
                 "/api/v1/runs/run-1/", "/api/v1/dead/retry/", "/api/v1/jobs/emails/job-1/retry/", "/groups/",
                 "/groups/g1/"):
        assert name in urls, name
    assert len(urls) > 25


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["get", "post"])
def test_every_url_redirects_anonymous_users_to_the_login(client: Client, method: str):
    login = reverse("login")
    for url in every_url():
        response = getattr(client, method)(url)
        if url.startswith("/api/"):  # the JSON API answers 401 in JSON (tests/board/test_api.py)
            assert response.status_code == 401 and response.json()["error"], url
            continue
        if url == "/metrics":  # Prometheus cannot follow a login: 401 (tests/board/test_metrics_endpoint.py)
            assert response.status_code in (401, 405) and b"oqron_" not in response.content, url
            continue
        assert response.status_code == 302, (url, response.status_code)
        location = response["Location"]
        assert location.startswith(login) or location.startswith("/admin/login/"), (url, location)


@pytest.mark.django_db
def test_the_login_page_is_public_and_has_its_hooks(client: Client):
    body = client.get(reverse("login")).content.decode()
    assert 'data-testid="login-form"' in body and 'id="login-form"' in body


OPERATOR_ACTIONS = [
    ("job-action", {"queue": "emails", "job_id": "d1", "action": "retry"}, {}),
    ("job-action", {"queue": "emails", "job_id": "w1", "action": "cancel"}, {}),
    ("job-action", {"queue": "emails", "job_id": "w1", "action": "promote"}, {}),
    ("job-action", {"queue": "emails", "job_id": "d1", "action": "delete"}, {"confirmed": "yes"}),
    ("dead-retry", {}, {"ids": ["emails:d1"]}),
    ("dead-retry", {}, {"mode": "matching", "rendered_at": "99999999999999"}),
    ("dead-delete", {}, {"ids": ["emails:d1"], "confirmed": "on"}),
    ("queue-pause", {"queue": "emails"}, {}),
    ("queue-resume", {"queue": "emails"}, {}),
    ("operation-create", {}, {"action": "retry"}),
    ("operation-action", {"op_id": "op-1", "verb": "cancel"}, {}),
]


def test_a_viewer_gets_403_on_every_action_and_nothing_changes(board: Board):
    queue_control(board.plane, "emails")
    put_jobs(board.plane, [job_value("emails", "w1"), dead_job("emails", "d1")])
    for name, kwargs, data in OPERATOR_ACTIONS:
        response = board.viewer.post(reverse(f"oqronboard:{name}", kwargs=kwargs), data)
        assert response.status_code == 403, (name, kwargs)
    assert board.plane.get("queue_dlq:emails", "d1") is not None
    assert board.plane.get("queue_job:emails", "w1").value["status"] == "waiting"
    assert board.plane.get("queue", "emails").value["paused"] is False
    assert board.plane.list("audit").records == []


def test_a_viewer_sees_no_action_buttons(board: Board):
    queue_control(board.plane, "emails")
    put_jobs(board.plane, [job_value("emails", "w1"), dead_job("emails", "d1")])
    pages = [reverse("oqronboard:dead-letters"), reverse("oqronboard:definitions"), reverse("oqronboard:job",
                                                                                            args=["emails", "d1"]),
             reverse("oqronboard:job", args=["emails", "w1"]), reverse("oqronboard:queue-jobs", args=["emails"])]
    for url in pages:
        body = board.viewer.get(url).content.decode()
        assert 'data-testid="retry-' not in body and 'data-testid="pause-' not in body, url
        assert 'data-testid="cancel-' not in body and "Delete selected" not in body, url
        assert 'data-operator="0"' in body
    operator_body = board.operator.get(reverse("oqronboard:dead-letters")).content.decode()
    assert 'data-testid="retry-d1"' in operator_body and 'data-operator="1"' in operator_body


def test_actions_refuse_get(board: Board):
    queue_control(board.plane, "emails")
    assert board.operator.get(reverse("oqronboard:queue-pause", args=["emails"])).status_code == 405
    assert board.operator.get(reverse("oqronboard:dead-retry")).status_code == 405


def test_csrf_is_enforced_and_the_htmx_header_passes(board: Board):
    queue_control(board.plane, "emails")
    user = get_user_model().objects.get(username__startswith="olivia-")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    url = reverse("oqronboard:queue-pause", args=["emails"])
    assert client.post(url).status_code == 403
    page = client.get(reverse("oqronboard:definitions")).content.decode()
    token = re.search(r'hx-headers=\'\{"X-CSRFToken": "([^"]+)"\}\'', page).group(1)
    response = client.post(url, HTTP_X_CSRFTOKEN=token, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert board.plane.get("queue", "emails").value["paused"] is True


def test_pages_carry_a_csp_and_no_inline_script_or_style(board: Board):
    queue_control(board.plane, "emails")
    put_jobs(board.plane, [job_value("emails", "w1"), dead_job("emails", "d1")])
    for url in (reverse("oqronboard:home"), reverse("oqronboard:runs"), reverse("oqronboard:dead-letters"),
                reverse("oqronboard:definitions"),
                reverse("oqronboard:job", args=["emails", "d1"]), reverse("oqronboard:audit"), reverse("login")):
        response = board.operator.get(url)
        policy = response["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy and "style-src 'self'" in policy
        body = response.content.decode()
        for tag in re.findall(r"<script\b[^>]*>", body):
            assert "src=" in tag, (url, tag)
        assert not re.search(r"\sstyle=", body), url
        assert not re.search(r"\son[a-z]+=", body), url
        assert "hx-on" not in body and "js:" not in body


def test_the_audit_namespace_is_a_custom_record_kind():
    assert classify_namespace("audit") == "record"
    assert classify_namespace("audit:job:emails:j1") == "record"


def test_refusals_render_the_board_pages(board: Board, settings):
    settings.DEBUG = False
    queue_control(board.plane, "emails")
    forbidden = board.viewer.post(reverse("oqronboard:queue-pause", args=["emails"]))
    assert forbidden.status_code == 403 and b'data-testid="forbidden"' in forbidden.content
    assert b"oqronboard.operate" in forbidden.content
    missing = board.viewer.get(reverse("oqronboard:run", args=["nope"]))
    assert missing.status_code == 404 and b'data-testid="not-found"' in missing.content


def test_the_login_page_has_no_keyboard_footer(board: Board):
    body = Client().get(reverse("login")).content.decode()
    assert "Keys:" not in body
    assert "Keys:" in board.viewer.get(reverse("oqronboard:home")).content.decode()


@pytest.mark.django_db
def test_the_standalone_project_serves_the_icon_browsers_ask_for(admin_client: Client):
    # The admin's pages are Django's own (never overridden: a host's admin stays the host's);
    # the browser's /favicon.ico gets the board's icon.
    response = Client().get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("oqronboard/favicon.svg")
    assert Client().get(response["Location"]).status_code == 200
