"""Django settings of the standalone board project: the board and the engine's Django
integration, configured by environment variables (docs/how-to/production-workers.md, docs/reference/environment.md).

A host project never imports this module: it adds ``oqronkit.contrib.django`` and
``oqronboard`` to its own settings. Here the engine's ``OQRON`` dict stays empty, so
the ``OQRON_*`` variables configure it; ``DATABASES["default"]`` comes from
``OQRON_DATABASE_URL`` (the engine's tables live there). Nothing here raises on a bad
value: ``manage.py check`` reports it.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from oqronboard import standalone

PACKAGE_DIR = Path(__file__).resolve().parent
# The checkout holding manage.py, or the working directory of an installed board.
BASE_DIR = standalone.home(PACKAGE_DIR, Path.cwd())


def _env_flag(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    return default if value is None else value.strip().lower() in ("1", "true", "yes", "on")


# -- the engine ------------------------------------------------------------------------

# Keys (any case): MODE, DATABASE_ALIAS, REDIS_URL, PROJECT, ENVIRONMENT, MAX_RECORD_BYTES,
# ACKNOWLEDGE_V1_LAYOUT, RUN_LOG_LIMIT, RUN_TIMELINE_LIMIT, ... Left empty here: the OQRON_*
# variables fill it (mode "sqlite" on oqron.sqlite3 in BASE_DIR by default).
OQRON: dict[str, object] = {}
# What the environment got wrong, reported by `manage.py check` (oqron.E010).
OQRON_SETTINGS_PROBLEMS: list[str] = []

DATABASES = {"default": standalone.database(os.environ, BASE_DIR, OQRON_SETTINGS_PROBLEMS)}
# The board's optional read replica (docs/how-to/scale-out.md): list and detail pages read
# there, actions, audit, sessions and the engine use the primary.
_READ_DATABASE = standalone.read_database(os.environ)
if _READ_DATABASE is not None:
    DATABASES[standalone.READ_ALIAS] = _READ_DATABASE
    OQRON_READ_DATABASE_ALIAS = standalone.READ_ALIAS
DATABASE_ROUTERS = ["oqronboard.base.replica.ReadReplicaRouter"]
CACHES = {"default": standalone.cache(os.environ)}
# The standalone project creates the groups "viewers" and "operators" on migrate.
OQRON_BOARD_GROUPS = True
# The demo's ticker stays off the overview (OQRON_INTERNAL_QUEUES, comma-separated, overrides it).
if "OQRON_INTERNAL_QUEUES" not in os.environ:
    OQRON_INTERNAL_QUEUES = ["demo-ticker"]

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

# HTTPS, on by default in production: Secure session and CSRF cookies, a year of HSTS,
# the redirect (docs/how-to/secure-the-board.md). A developer's machine (DEBUG)
# serves plain HTTP; a production board that must too opts out with DJANGO_PLAIN_HTTP=1,
# and `check --deploy` warns (oqron.security.W001). Each DJANGO_SECURE_* variable overrides.
OQRON_PLAIN_HTTP = not DEBUG and _env_flag("DJANGO_PLAIN_HTTP", False)
_HTTPS = not DEBUG and not OQRON_PLAIN_HTTP
SECURE_HSTS_SECONDS = standalone.seconds(os.environ, "DJANGO_SECURE_HSTS_SECONDS",
                                         standalone.HSTS_SECONDS if _HTTPS else 0, OQRON_SETTINGS_PROBLEMS)
# includeSubDomains reaches the board host's own subdomains, never its parent's; preload only
# consents to a listing, which needs the apex domain submitted (hstspreload.org). 0 drops either.
SECURE_HSTS_INCLUDE_SUBDOMAINS = _env_flag("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", _HTTPS)
SECURE_HSTS_PRELOAD = _env_flag("DJANGO_SECURE_HSTS_PRELOAD", _HTTPS)
SECURE_SSL_REDIRECT = _env_flag("DJANGO_SECURE_SSL_REDIRECT", _HTTPS)
# Load balancers and Kubernetes probe the process itself, over plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^health/"]
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = _env_flag("DJANGO_SECURE_COOKIES", _HTTPS)
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto (only then: a client could forge it).
if _env_flag("DJANGO_SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
if OQRON_PLAIN_HTTP:
    # One decision, one warning: oqron.security.W001 names the opt-out instead of Django's four
    # (no HSTS, no redirect, cookies not Secure), which would each suggest a fix beside it.
    SILENCED_SYSTEM_CHECKS = ["security.W004", "security.W008", "security.W012", "security.W016"]
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
    "oqronkit.contrib.django",
    "oqronboard",
]
# The demo app declares the demo queues in demo/oqron.py; bin/demo sets OQRON_DEMO=1 so
# `runworker` discovers them. Off by default: a real deployment never consumes them.
if _env_flag("OQRON_DEMO", False):
    INSTALLED_APPS.append("demo")

# Django's tasks framework on oqronkit's queues (docs/how-to/django-tasks.md).
TASKS = {"default": {"BACKEND": "oqronkit.contrib.django.tasks.OqronBackend", "QUEUES": ["default"]}}

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
    # Where this request reads the durable tables (a read replica, when one is configured).
    "oqronboard.base.replica.ReadReplicaMiddleware",
    # Last, so its 400s get every header above; WhiteNoise serves static files before it
    # (their own caching). The board's views keep these promises on their own; this adds
    # them to the admin and the login page: 400 for a NUL or lone surrogate anywhere in a
    # request, the board's Content-Security-Policy, and Cache-Control: no-store.
    "oqronboard.base.middleware.BoardRequestMiddleware",
]

ROOT_URLCONF = "oqronboard.project_urls"
WSGI_APPLICATION = "oqronboard.wsgi.application"
ASGI_APPLICATION = "oqronboard.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
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
LOGIN_REDIRECT_URL = "oqronboard:home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
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
