"""What the standalone board project (``oqronboard.settings``) derives from its environment.

A host project writes its own ``DATABASES`` and ``CACHES``; the standalone project is
configured by variables instead (``OQRON_DATABASE_URL``, ``OQRON_MODE``,
``OQRON_REDIS_URL``, ``OQRON_READ_DATABASE_URL``), turned into Django settings here.
Nothing here raises on a bad value: settings must import so ``manage.py check`` can
report it (each problem becomes ``oqron.E010``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oqronkit import ConfigurationError
from oqronkit.config import settings_from_env
from oqronkit.contrib.django.databases import django_database

from .base.conf import READ_URL_VARIABLE

DEFAULT_SQLITE_NAME = "oqron.sqlite3"
# The board's optional read replica: the Django alias its variable becomes.
READ_ALIAS = "oqron_read"
READ_CONNECT_TIMEOUT_S = 2
READ_KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 2, "keepalives_count": 3}
SQL_MODES = ("sqlite", "postgres", "redis-postgres")
HSTS_SECONDS = 31_536_000  # a year: what hstspreload.org asks for, and Django's deployment checklist


def home(package_dir: Path, cwd: Path) -> Path:
    """Where relative files go (the default SQLite database, collected static files): the
    source checkout holding ``manage.py``, or the working directory of an installed board."""
    checkout = package_dir.parent
    return checkout if (checkout / "manage.py").is_file() else cwd


def seconds(environ: Mapping[str, str], name: str, default: int, problems: list[str]) -> int:
    """Whole seconds from the variable ``name``, else ``default``; a bad value is recorded
    in ``problems`` and answered with ``default`` (a typo must not switch HSTS off)."""
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        problems.append(f"{name} must be a whole number of seconds (0 or more), got {raw!r}.")
        return default
    return value


def database(environ: Mapping[str, str], home: Path, problems: list[str]) -> dict[str, Any]:
    """``DATABASES["default"]``: ``OQRON_DATABASE_URL`` in a SQL mode, else ``oqron.sqlite3``
    in ``home`` (``memory`` and ``redis`` modes keep Django's own tables there). A bad URL
    is recorded in ``problems`` and answered with an empty in-memory database, so no
    typo sends ``migrate`` or the board to a database the user did not name."""
    try:
        values = settings_from_env(environ)
    except ConfigurationError as exc:
        problems.append(str(exc))
        values = {}
    url = str(values.get("database_url") or "")
    if values.get("mode", "sqlite") not in SQL_MODES or not url:
        url = f"sqlite:///{home / DEFAULT_SQLITE_NAME}"
    elif url.startswith("sqlite:///") and not Path(url[len("sqlite:///"):]).is_absolute():
        url = f"sqlite:///{(home / url[len('sqlite:///'):]).resolve()}"
    try:
        return django_database(url)
    except ConfigurationError as exc:
        problems.append(f"OQRON_DATABASE_URL: {exc}")
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}


def cache(environ: Mapping[str, str]) -> dict[str, Any]:
    """``CACHES["default"]``: django-redis on the engine's Redis (its own key prefix) in
    the Redis modes, so every board process shares what it caches; else local memory."""
    try:
        values = settings_from_env(environ)
    except ConfigurationError:
        values = {}
    redis_url = str(values.get("redis_url") or "")
    if values.get("mode") in ("redis", "redis-postgres") and redis_url:
        return {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": redis_url,
                "KEY_PREFIX": "oqronboard", "TIMEOUT": 300,
                # A Redis outage degrades to no caching, never to a failed page.
                "OPTIONS": {"IGNORE_EXCEPTIONS": True, "SOCKET_CONNECT_TIMEOUT": 1, "SOCKET_TIMEOUT": 1}}
    return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "oqronboard"}


def read_database(environ: Mapping[str, str]) -> dict[str, Any] | None:
    """``DATABASES[READ_ALIAS]`` for ``OQRON_READ_DATABASE_URL`` (docs/how-to/scale-out.md),
    or None when it is unset or not a ``postgresql://`` URL (``oqron.E020`` says so)."""
    url = environ.get(READ_URL_VARIABLE, "").strip()
    if not url.startswith(("postgresql://", "postgres://")):
        return None
    try:
        database = django_database(url)
    except ConfigurationError:
        return None
    # A replica that does not answer must cost a page seconds, not a TCP timeout; keepalives
    # notice a host that vanished under an open connection (libpq's own parameters).
    options = database["OPTIONS"]
    options.setdefault("connect_timeout", READ_CONNECT_TIMEOUT_S)
    for name, value in READ_KEEPALIVES.items():
        options.setdefault(name, value)
    # A test run never creates a database on the replica: it mirrors the default.
    database["TEST"] = {"MIRROR": "default"}
    return database
