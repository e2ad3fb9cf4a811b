"""The board's system checks: what it needs from the project it is mounted in.

A board mounted without the integration app, the auth and session apps or their
middleware fails ``manage.py check`` with a hint, never a 500 on its first request.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core import checks

from oqronkit import ConfigurationError, OqronError

from .base import conf
from .base.tokens import token_holders

REQUIRED_APPS = {
    "oqronkit.contrib.django": "the engine's Django integration, which configures the engine the board reads",
    "django.contrib.auth": "the board's logins and permissions",
    "django.contrib.contenttypes": "the board's permissions",
    "django.contrib.sessions": "logged-in sessions",
    "django.contrib.messages": "the messages the board's actions leave",
}
REQUIRED_MIDDLEWARE = {
    "django.contrib.sessions.middleware.SessionMiddleware": "logged-in sessions",
    "django.contrib.auth.middleware.AuthenticationMiddleware": "request.user, which every board page checks",
    "django.contrib.messages.middleware.MessageMiddleware": "the messages the board's actions leave",
    "django.middleware.csrf.CsrfViewMiddleware": "CSRF protection of the board's actions",
}


@checks.register("oqron")
def check_host_project(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """``oqron.E110`` for a missing app, ``oqron.E111`` for a missing middleware."""
    found: list[checks.CheckMessage] = []
    for app, why in REQUIRED_APPS.items():
        if not apps.is_installed(app):
            found.append(checks.Error(f"The board needs {app!r} in INSTALLED_APPS: {why}.",
                                      hint=f'INSTALLED_APPS += ["{app}"]', id="oqron.E110"))
    middleware = list(getattr(settings, "MIDDLEWARE", None) or [])
    for name, why in REQUIRED_MIDDLEWARE.items():
        if name not in middleware:
            found.append(checks.Error(f"The board needs {name!r} in MIDDLEWARE: {why}.",
                                      hint="Add it to MIDDLEWARE in the order Django's startproject template uses.",
                                      id="oqron.E111"))
    return found


@checks.register("oqron")
def check_settings_problems(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """``oqron.E010``: what the standalone project's settings could not read from the environment."""
    return [checks.Error(problem, hint="Fix the variable (docs/reference/environment.md).",
                         id="oqron.E010") for problem in getattr(settings, "OQRON_SETTINGS_PROBLEMS", ())]


@checks.register("oqron")
def check_metrics_token(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """oqron.metrics.E001: an ``OQRON_METRICS_TOKEN`` too short to ever authenticate."""
    token = conf.metrics_token()
    if not isinstance(token, str) or (token and len(token) < conf.MIN_TOKEN_CHARS):
        return [checks.Error(
            f"OQRON_METRICS_TOKEN must be a string of at least {conf.MIN_TOKEN_CHARS} characters; a shorter one "
            "never authenticates, so Prometheus would get 401.",
            hint="python -c 'import secrets; print(secrets.token_urlsafe(32))'", id="oqron.metrics.E001")]
    return []


@checks.register("oqron")
def check_login_settings(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """``oqron.proxies.E001``: an ``OQRON_TRUSTED_PROXIES`` entry that is no address or network
    (the login limiter then believes no ``X-Forwarded-For``); ``oqron.login.E001``: a login
    limit that is no ``(attempts, seconds)`` (the defaults then hold)."""
    found: list[checks.CheckMessage] = []
    try:
        conf.trusted_proxies()
    except ConfigurationError as exc:
        found.append(checks.Error(str(exc), hint="List your reverse proxies' addresses or CIDR networks, e.g. "
                                  "OQRON_TRUSTED_PROXIES=10.0.0.0/24,192.0.2.7.", id="oqron.proxies.E001"))
    try:
        conf.login_rate_limits()
    except ConfigurationError as exc:
        found.append(checks.Error(str(exc), hint="(attempts, seconds) in settings, attempts/seconds such as 10/60 "
                                  "in the environment.", id="oqron.login.E001"))
    return found


@checks.register("oqron", checks.Tags.security, deploy=True)
def check_plain_http(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """``oqron.security.W001`` (``check --deploy``): the standalone board told to serve plain
    HTTP in production (``DJANGO_PLAIN_HTTP=1``, setting ``OQRON_PLAIN_HTTP``)."""
    if not getattr(settings, "OQRON_PLAIN_HTTP", False) or settings.DEBUG:
        return []
    return [checks.Warning(
        "The board serves plain HTTP (DJANGO_PLAIN_HTTP=1): its session and CSRF cookies are not Secure, and "
        "there is no HSTS and no redirect to HTTPS, so passwords and sessions cross the network readable.",
        hint="Serve it over HTTPS and unset DJANGO_PLAIN_HTTP (behind a TLS-terminating proxy that sets "
             "X-Forwarded-Proto, also set DJANGO_SECURE_PROXY_SSL_HEADER=1); keep it only on a network you trust.",
        id="oqron.security.W001")]


@checks.register("oqron")
def check_scope_settings(app_configs: Iterable[Any] | None = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """``oqron.E120``: an ``OQRON_API_TOKENS`` entry that can never authenticate (its
    scopes or user unreadable), or an unreadable ``OQRON_PRODUCTION_ENVIRONMENTS`` or
    ``OQRON_CONFIGURED_SCOPE_OPEN``. The token itself is never printed: it is a secret."""
    found: list[checks.CheckMessage] = []
    try:
        entries = token_holders()
    except OqronError as exc:
        entries = []
        found.append(checks.Error(str(exc), id="oqron.E120"))
    for number, (_, holder) in enumerate(entries, 1):
        if isinstance(holder, ValueError):
            found.append(checks.Error(
                f"OQRON_API_TOKENS: entry {number} never authenticates: {holder}",
                hint='A token maps to "username", "username:project/environment:..." (* for any name) or '
                     '{"user": "username", "scopes": ["project/environment", ...]} (docs/reference/json-api.md).',
                id="oqron.E120"))
    for read in (conf.production_environments, conf.configured_scope_open):
        try:
            read()
        except OqronError as exc:
            found.append(checks.Error(str(exc), id="oqron.E120"))
    return found
