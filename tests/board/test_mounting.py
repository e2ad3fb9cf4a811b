"""The board mounted under ``ops/`` in a host project: the host's URLs, middleware,
templates, login page and users, none of the standalone project's.

Every link, form, htmx request and redirect follows the mount point; the host's own
``home`` and ``login`` names stay the host's; anonymous users go to the host's
``LOGIN_URL``, a user without ``oqronboard.view_board`` gets 403; each view keeps its
input checks and headers without the standalone project's middleware.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core import checks
from django.test import Client, override_settings
from django.urls import reverse

from tests.board.host.settings import HOST
from tests.board.seed import Board
from tests.board.test_fuzz_urls import seed

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["home", "runs", "failed-runs", "queues", "dead-letters", "definitions", "schedules", "topics", "webhooks",
         "webhook-log", "logs", "limits", "caches", "groups", "audit"]
DETAILS = [("run", ["run-1"]), ("queue-jobs", ["emails"]), ("job", ["emails", "job-1"]), ("topic-log", ["emails"])]
# Every attribute that makes the browser ask for a URL.
URL_ATTRIBUTES = re.compile(r'\b(?:href|src|action|hx-get|hx-post|hx-delete|hx-put)="([^"]*)"')


@pytest.fixture
def host(board: Board) -> Iterator[Board]:
    seed(board)
    with override_settings(**HOST):
        yield board


def urls_in(body: str) -> list[str]:
    return [u.replace("&amp;", "&") for u in URL_ATTRIBUTES.findall(body)]


def test_the_hosts_names_stay_the_hosts(host: Board):
    assert (reverse("home"), reverse("login")) == ("/", "/login/")
    assert reverse("oqronboard:home") == "/ops/" and reverse("oqronboard:runs") == "/ops/runs/"
    assert Client().get("/").content == b"the host's home"


def test_every_link_form_and_htmx_request_follows_the_mount_point(host: Board):
    pages = [reverse(f"oqronboard:{name}") for name in PAGES]
    pages += [reverse(f"oqronboard:{name}", args=args) for name, args in DETAILS]
    outside: list[str] = []
    for page in pages:
        response = host.operator.get(page)
        assert response.status_code == 200, (page, response.status_code)
        body = response.content.decode()
        assert "INVALID-" not in body, page  # the host's string_if_invalid never reaches the board
        for url in urls_in(body):
            if url.startswith(("#", "?")) or url == "":
                continue
            if not url.startswith(("/ops/", "/static/oqronboard/")):
                outside.append(f"{page}: {url}")
    assert outside == []


def test_redirects_follow_the_mount_point(host: Board):
    response = host.operator.post(reverse("oqronboard:queue-pause", args=["emails"]))
    assert response.status_code == 302 and response["Location"].startswith("/ops/")
    assert host.operator.post(reverse("oqronboard:logout"))["Location"] == "/login/"


def test_anonymous_users_go_to_the_hosts_login(host: Board):
    for name in ("home", "runs", "dead-letters"):
        url = reverse(f"oqronboard:{name}")
        response = Client().get(url)
        assert response.status_code == 302 and response["Location"] == f"/login/?next={url}"
    assert Client().get(reverse("oqronboard:health-live")).status_code == 200  # probes stay public
    assert Client().get(reverse("oqronboard:api-queues")).status_code == 401


def test_viewing_needs_the_board_permission(host: Board):
    users = get_user_model()
    stranger = users.objects.create_user(f"host-user-{host.db.project[-6:]}", password="pw")
    client = Client()
    client.force_login(stranger)
    assert client.get(reverse("oqronboard:home")).status_code == 403
    assert client.get(reverse("oqronboard:api-queues")).status_code == 403
    stranger.user_permissions.add(Permission.objects.get(codename="view_board", content_type__app_label="oqronboard"))
    client.force_login(users.objects.get(pk=stranger.pk))
    assert client.get(reverse("oqronboard:home")).status_code == 200
    assert client.post(reverse("oqronboard:queue-pause", args=["emails"])).status_code == 403  # no operate


def test_each_view_keeps_its_promises_without_the_standalone_middleware(host: Board):
    assert host.viewer.get("/ops/jobs/%00/").status_code == 400
    assert host.viewer.get(reverse("oqronboard:api-queues"), {"queue": "\x00"}).json()["error"].startswith("Bad")
    page = host.viewer.get(reverse("oqronboard:home"))
    assert "no-store" in page["Cache-Control"]
    assert "script-src 'self'" in page["Content-Security-Policy"] and page["X-Frame-Options"] == "DENY"
    # htmx requests work without django-htmx's middleware: a live fragment, not a page.
    fragment = host.viewer.get(reverse("oqronboard:home"), {"panel": "live"}, HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200 and b"<html" not in fragment.content


def test_the_hosts_checks_pass_without_the_board_admin_namespace(host: Board):
    found = checks.run_checks(include_deployment_checks=False)
    assert [m.id for m in found if m.level >= checks.WARNING] == []  # no urls.W005: the admin is the host's


def test_a_missing_middleware_fails_the_check_with_a_hint(host: Board):
    without = [m for m in HOST["MIDDLEWARE"] if not m.endswith("AuthenticationMiddleware")]
    with override_settings(MIDDLEWARE=without):
        found = [m for m in checks.run_checks() if m.id == "oqron.E111"]
    assert len(found) == 1 and "AuthenticationMiddleware" in found[0].msg and found[0].hint


def host_check(**settings: Any) -> subprocess.CompletedProcess[str]:
    """``manage.py check`` on a host settings module written for the test."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OQRON_", "DJANGO_"))}
    return subprocess.run([sys.executable, "-c", "import django; from django.core.management import "
                           "execute_from_command_line as run; run(['x', 'check'])"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**env, "DJANGO_SETTINGS_MODULE": "tests.board.host.missing_app"})


def test_a_board_mounted_without_its_apps_fails_the_check_not_a_request():
    result = host_check()
    assert result.returncode != 0, result.stdout
    assert "oqron.E112" in result.stderr and 'INSTALLED_APPS += ["oqronboard"]' in result.stderr
    assert "Traceback" not in result.stderr
