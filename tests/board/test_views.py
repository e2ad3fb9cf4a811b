"""The board shell: login required, the login page, and the engine summary."""

from __future__ import annotations

import pytest
from django.urls import reverse

from oqronkit import BackendUnavailable
from oqronkit.contrib.django import engine

pytestmark = pytest.mark.django_db


def test_home_requires_login(client):
    response = client.get(reverse("oqronboard:home"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_login_page_renders_a_form(client):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    body = response.content.decode()
    assert 'name="username"' in body and 'name="password"' in body and "csrfmiddlewaretoken" in body
    assert "/static/oqronboard/css/board.css" in body


def test_logging_in_lands_on_the_overview(client, django_user_model):
    django_user_model.objects.create_user("demo", password="demo")
    response = client.post(reverse("login"), {"username": "demo", "password": "demo"}, follow=True)
    assert response.redirect_chain[-1][0] == reverse("oqronboard:home")
    assert b"Overview" in response.content


def test_wrong_password_shows_an_error(client, django_user_model):
    django_user_model.objects.create_user("demo", password="demo")
    response = client.post(reverse("login"), {"username": "demo", "password": "nope"})
    assert response.status_code == 200
    assert b"didn't match" in response.content


def test_home_shows_the_engine_configuration(admin_client, settings):
    settings.OQRON = {"MODE": "memory", "PROJECT": "shop", "ENVIRONMENT": "staging"}
    response = admin_client.get(reverse("oqronboard:home"))
    assert response.status_code == 200
    body = response.content.decode()
    for text in ("memory", "shop", "staging", "ready", 'hx-headers=\'{"X-CSRFToken"'):
        assert text in body


def test_home_shows_a_configuration_problem_instead_of_failing(admin_client, settings):
    settings.OQRON = {"MODE": "bogus"}
    for url in (reverse("oqronboard:home"), reverse("oqronboard:runs"), reverse("oqronboard:dead-letters")):
        response = admin_client.get(url)
        assert response.status_code == 503  # said plainly, never a traceback
        assert b"The engine is not ready" in response.content
        assert b"OQRON mode &#x27;bogus&#x27;" in response.content


def test_home_never_shows_a_database_password(admin_client, settings, monkeypatch):
    settings.OQRON = {"MODE": "sqlite"}

    def unreachable() -> None:  # the real pool would wait out its connect timeout
        raise BackendUnavailable("PostgreSQL at postgresql://u:***@127.0.0.1:1/db is not reachable")

    monkeypatch.setattr(engine, "get_durable", unreachable)
    response = admin_client.get(reverse("oqronboard:home"))
    assert response.status_code == 200
    assert b"The engine is not ready" in response.content
    assert b"hunter2" not in response.content
    assert b"u:***@127.0.0.1" in response.content


def test_logout_is_a_post(admin_client):
    response = admin_client.post(reverse("oqronboard:logout"))
    assert response.status_code == 302
    assert admin_client.get(reverse("oqronboard:home")).status_code == 302
