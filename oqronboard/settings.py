"""Django settings for the OqronBoard project.

The engine's settings live in one dict, ``OQRON``; the ``OQRON_*`` environment
variables override it (README.md, Configuration). Django's default database is derived
from the same database URL, so the unmanaged models read the engine's own tables.
Nothing here raises on a bad ``OQRON`` value: ``manage.py check`` reports it
(``oqron.E001``).
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from oqronboard import engine

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    return default if value is None else value.strip().lower() in ("1", "true", "yes", "on")


# -- the engine ------------------------------------------------------------------------

# Keys (any case): MODE, DATABASE_URL, REDIS_URL, PROJECT, ENVIRONMENT,
# MAX_RECORD_BYTES, ACKNOWLEDGE_V1_LAYOUT, RUN_LOG_LIMIT, RUN_TIMELINE_LIMIT.
# Defaults: mode "sqlite" on oqron.sqlite3 beside manage.py, project "default",
# environment "development".
OQRON: dict[str, object] = {}

DATABASES = {"default": engine.database_settings(OQRON, os.environ, base_dir=BASE_DIR)}
# The board's optional read replica (README, "Read replica"): list and detail pages read
# there, actions, audit, sessions and the engine use the primary.
_READ_DATABASE = engine.read_database_settings(os.environ)
if _READ_DATABASE is not None:
    DATABASES[engine.READ_ALIAS] = _READ_DATABASE
OQRON_READ_DATABASE_ALIAS = engine.READ_ALIAS if _READ_DATABASE is not None else None
OQRON_READ_REPLICA_MAX_LAG_SECONDS = float(os.environ.get("OQRON_READ_REPLICA_MAX_LAG_SECONDS", "30"))
OQRON_READ_REPLICA_CHECK_SECONDS = float(os.environ.get("OQRON_READ_REPLICA_CHECK_SECONDS", "2"))
OQRON_READ_PIN_SECONDS = float(os.environ.get("OQRON_READ_PIN_SECONDS", "5"))
DATABASE_ROUTERS = ["oqronboard.base.replica.ReadReplicaRouter"]
CACHES = {"default": engine.cache_settings(OQRON, os.environ, base_dir=BASE_DIR)}
# Seconds the board shares what every viewer's poll would recompute (the overview's
# queries); an operator's action makes the next poll fresh. 0 turns it off.
OQRON_BOARD_CACHE_SECONDS = float(os.environ.get("OQRON_BOARD_CACHE_SECONDS", "2"))

# -- Django ----------------------------------------------------------------------------

# The defaults suit a developer's machine; production sets DJANGO_SECRET_KEY,
# DJANGO_DEBUG=0 and DJANGO_ALLOWED_HOSTS (`manage.py check --deploy` says so too).
DEBUG = _env_flag("DJANGO_DEBUG", True)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        # A production board signing sessions with a key everyone can read is worse than none.
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG=0 (a long random string).")
    SECRET_KEY = "django-insecure-oqronboard-development-key-change-me-in-production"

# HTTPS hardening, off by default (a developer's machine serves plain HTTP).
SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_SECURE_HSTS_SECONDS", "0") or 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _env_flag("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = _env_flag("DJANGO_SECURE_HSTS_PRELOAD", False)
SECURE_SSL_REDIRECT = _env_flag("DJANGO_SECURE_SSL_REDIRECT", False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = _env_flag("DJANGO_SECURE_COOKIES", False)
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto (only then: a client could forge it).
if _env_flag("DJANGO_SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
ALLOWED_HOSTS = [h for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # Before staticfiles, so runserver serves static files the way production does.
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "oqronboard",
    "runs",
    "jobs",
    "definitions",
]
# The demo app declares the demo queues in demo/oqron.py; bin/demo sets OQRON_DEMO=1 so
# `runworker` discovers them. Off by default: a real deployment never consumes them.
if _env_flag("OQRON_DEMO", False):
    INSTALLED_APPS.append("demo")

# Django's tasks framework on oqronkit's queues (README, "Django tasks (django.tasks)").
TASKS = {"default": {"BACKEND": "oqronboard.tasks.OqronBackend", "QUEUES": ["default"]}}

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Safe by default: every view needs a login unless marked @login_not_required.
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Django's built-in Content-Security-Policy (SECURE_CSP below).
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    # Where this request reads the durable tables (a read replica, when one is configured).
    "oqronboard.base.replica.ReadReplicaMiddleware",
    # Last, so its 400s get every header above; WhiteNoise serves static files before it
    # (their own caching). 400 for a NUL or lone surrogate anywhere in a request, and
    # Cache-Control: no-store on every page.
    "oqronboard.base.middleware.BoardRequestMiddleware",
]

# No inline script or style anywhere: the board's JavaScript and CSS are static files,
# htmx's own indicator <style> is switched off (templates/base.html, htmx-config).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}

ROOT_URLCONF = "oqronboard.urls"
WSGI_APPLICATION = "oqronboard.wsgi.application"
ASGI_APPLICATION = "oqronboard.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "oqronboard.context_processors.board",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Hashed, compressed files in production (after collectstatic); plain files while
    # developing, so runserver needs no collectstatic.
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The alias whose database holds the durable tables (oqron_runs, oqron_jobs,
# oqron_records): the board's unmanaged models read there (oqronboard.base.records).
OQRON_DATABASE_ALIAS = "default"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {
        "oqronkit": {"handlers": ["console"], "level": os.environ.get("OQRON_LOG_LEVEL", "INFO")},
        # Django's task receivers log two INFO lines per task that, without DEBUG, no default
        # handler keeps: not building them saves ~20 us a task. Failures (ERROR) still log.
        "django.tasks": {"level": os.environ.get("DJANGO_TASKS_LOG_LEVEL", "INFO" if DEBUG else "WARNING")},
    },
}

# Modules that declare queues outside installed apps' oqron.py (runworker --import adds more).
OQRON_IMPORTS = [m.strip() for m in os.environ.get("OQRON_IMPORTS", "").split(",") if m.strip()]

# Queues the overview leaves out (the engine's own housekeeping, the demo's ticker); the
# Jobs page still lists them. Comma-separated in OQRON_INTERNAL_QUEUES.
OQRON_INTERNAL_QUEUES = [
    q.strip() for q in os.environ.get("OQRON_INTERNAL_QUEUES", "demo-ticker").split(",") if q.strip()
]

# The JSON API's bearer tokens, {token: username} (README, "JSON API"); from the
# environment as OQRON_API_TOKENS="<token>=alice,<token>=bob". A token under 20 characters never works.
OQRON_API_TOKENS: dict[str, str] = {
    token.strip(): user.strip()
    for token, _, user in (p.partition("=") for p in os.environ.get("OQRON_API_TOKENS", "").split(","))
    if token.strip() and user.strip()
}

# The bearer token Prometheus scrapes /metrics with (README, "Metrics, traces and logs");
# none by default: then only logged-in users holding oqronboard.view_metrics may. At least 20 characters.
OQRON_METRICS_TOKEN = os.environ.get("OQRON_METRICS_TOKEN", "")
