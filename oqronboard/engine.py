"""The one bridge from Django to the engine: settings in, a frozen ``OqronConfig`` out.

Only this module reads the ``OQRON`` setting and the ``OQRON_*`` environment
variables (habit 7). ``settings.py`` calls :func:`database_settings` so Django's
default database is the durable plane's database; everything else calls
:func:`get_config`, :func:`get_durable` or :func:`durable_for`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import oqronkit
from oqronkit import ConfigurationError, DurablePlane, OqronConfig

DEFAULT_SQLITE_NAME = "oqron.sqlite3"
# Seconds a Django SQLite connection waits for the write lock before "database is
# locked": the engine's workers write to the same file, and WAL lets readers through.
SQLITE_TIMEOUT_S = 20
_SQLITE_INIT = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL"
# Modes whose durable plane is not a SQL database the board's models can read.
NON_SQL_MODES = ("memory", "redis")

# The board's optional read replica: its variable and the Django alias settings.py gives it.
READ_URL_VARIABLE = "OQRON_READ_DATABASE_URL"
READ_ALIAS = "oqron_read"
READ_CONNECT_TIMEOUT_S = 2
READ_KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 2, "keepalives_count": 3}

_lock = threading.Lock()
_config: OqronConfig | None = None
_engine: oqronkit.Engine | None = None


# -- building the config -------------------------------------------------------------


def default_sqlite_url(base_dir: Path) -> str:
    """``sqlite:///<base_dir>/oqron.sqlite3`` with an absolute path."""
    return f"sqlite:///{Path(base_dir).resolve() / DEFAULT_SQLITE_NAME}"


def build_config(oqron: object, environ: Mapping[str, str], *, base_dir: Path) -> OqronConfig:
    """Build the engine config from an ``OQRON`` setting and an environment.

    The ``OQRON_*`` variables override the setting. A relative SQLite path is taken
    relative to ``base_dir`` (where ``manage.py`` lives), so the engine and Django open
    the same file whatever the working directory. Raises :class:`ConfigurationError`.
    """
    if oqron is None:
        oqron = {}
    if not isinstance(oqron, Mapping):
        raise ConfigurationError(
            f"The OQRON setting must be a dict such as {{'MODE': 'sqlite'}}, got {type(oqron).__name__}."
        )
    base = OqronConfig(database_url=default_sqlite_url(base_dir))
    config = oqronkit.config_from_mapping(oqron, base=base)
    config = oqronkit.config_from_env(environ, base=config)
    if config.database_url and config.database_url.startswith("sqlite:///"):
        path = Path(config.sqlite_path)
        if not path.is_absolute():
            config = _replace_url(config, f"sqlite:///{(Path(base_dir) / path).resolve()}")
    return config


def _replace_url(config: OqronConfig, url: str) -> OqronConfig:
    return oqronkit.config_from_mapping({"database_url": url}, base=config)


# -- Django's DATABASES from the same URL --------------------------------------------


def database_settings(oqron: object, environ: Mapping[str, str], *, base_dir: Path) -> dict[str, Any]:
    """``DATABASES["default"]`` for the configured durable plane.

    SQLite and Postgres modes point Django at the engine's own database, so the
    unmanaged models read the engine's tables. ``memory`` and ``redis`` modes have no
    SQL durable plane: Django (auth, sessions) then uses the default SQLite file.

    A bad configuration never raises here: settings must import so ``manage.py check``
    can report it as ``oqron.E001``. It falls back to an empty in-memory SQLite
    database rather than a file, so a typo never sends ``migrate`` or the board to a
    database the user did not name.
    """
    try:
        config = build_config(oqron, environ, base_dir=base_dir)
    except ConfigurationError:
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}
    if config.mode in NON_SQL_MODES or not config.database_url:
        return database_settings_for_url(default_sqlite_url(base_dir))
    return database_settings_for_url(config.database_url)


def cache_settings(oqron: object, environ: Mapping[str, str], *, base_dir: Path) -> dict[str, Any]:
    """``CACHES["default"]``: django-redis on the engine's Redis (its own key prefix) in
    the Redis modes, so every board process shares what it caches; else local memory."""
    try:
        config = build_config(oqron, environ, base_dir=base_dir)
    except ConfigurationError:
        config = None
    if config is not None and config.mode in ("redis", "redis-postgres") and config.redis_url:
        return {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": config.redis_url,
                "KEY_PREFIX": "oqronboard", "TIMEOUT": 300,
                # A Redis outage degrades to no caching, never to a failed page.
                "OPTIONS": {"IGNORE_EXCEPTIONS": True, "SOCKET_CONNECT_TIMEOUT": 1, "SOCKET_TIMEOUT": 1}}
    return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "oqronboard"}


def database_settings_for_url(url: str) -> dict[str, Any]:
    """A Django database dict for a ``sqlite:///`` or ``postgresql://`` URL."""
    if url.startswith("sqlite:///"):
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": oqronkit.config.sqlite_path(url),
            "OPTIONS": {
                "timeout": SQLITE_TIMEOUT_S,
                "init_command": _SQLITE_INIT,
                # Take the write lock at BEGIN, as the engine does: a deferred
                # transaction that reads then writes can fail under concurrent writers.
                "transaction_mode": "IMMEDIATE",
            },
        }
    if url.startswith(("postgresql://", "postgres://")):
        return _postgres_settings(url)
    raise ConfigurationError(
        f"Cannot derive a Django database from {oqronkit.config.redact_url(url)!r}: "
        "expected sqlite:/// or postgresql://."
    )


def read_database_settings(environ: Mapping[str, str]) -> dict[str, Any] | None:
    """``DATABASES[READ_ALIAS]`` for ``OQRON_READ_DATABASE_URL`` (README, "Read replica"),
    or None when it is unset or not a ``postgresql://`` URL (``oqron.E020`` says so)."""
    url = environ.get(READ_URL_VARIABLE, "").strip()
    if not url.startswith(("postgresql://", "postgres://")):
        return None
    try:
        database = _postgres_settings(url)
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


def _postgres_settings(url: str) -> dict[str, Any]:
    """Split a libpq URL into Django's NAME/USER/PASSWORD/HOST/PORT; every query
    parameter (``options=-csearch_path=...``, ``sslmode``...) goes to ``OPTIONS``."""
    parts = urlsplit(url)
    options = dict(parse_qsl(parts.query, keep_blank_values=True))
    host = unquote(parts.hostname or "") or options.pop("host", "")
    options.pop("host", None)
    try:
        port = parts.port
    except ValueError as exc:
        raise ConfigurationError(
            f"The port in {oqronkit.config.redact_url(url)!r} is not a number."
        ) from exc
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parts.path.lstrip("/")) or options.pop("dbname", ""),
        "USER": unquote(parts.username or "") or options.pop("user", ""),
        "PASSWORD": unquote(parts.password or "") or options.pop("password", ""),
        "HOST": host,
        "PORT": str(port) if port else options.pop("port", ""),
        "OPTIONS": options,
    }


# -- the process-wide engine objects -------------------------------------------------


def get_config() -> OqronConfig:
    """The validated config built from ``settings.OQRON`` and the environment (cached;
    raises :class:`ConfigurationError`, which the ``oqron.E001`` check reports)."""
    global _config
    config = _config
    if config is None:
        from django.conf import settings

        config = build_config(
            getattr(settings, "OQRON", {}),
            os.environ,
            base_dir=Path(getattr(settings, "BASE_DIR", Path.cwd())),
        )
        _config = config
    return config


def get_engine() -> oqronkit.Engine:
    """oqronkit's default engine, configured from these settings on first use, so
    queues declared in apps' ``oqron.py`` and the board's actions share one engine."""
    global _engine
    engine = _engine
    if engine is not None:
        return engine
    with _lock:
        if _engine is None:
            _engine = oqronkit.configure(get_config())
        return _engine


def get_durable() -> DurablePlane:
    """The process-wide durable plane, opened and started on first use.

    Thread-safe: concurrent first calls start one plane. Starting creates the tables
    and refuses a database that still holds the v1 ``oqron_kv`` table.
    """
    return get_engine().durable


def durable_for(project: str, environment: str) -> DurablePlane:
    """The durable plane seen from another (project, environment): same store, the
    scope validated like the configured one."""
    config = get_config().with_scope(project=project, environment=environment)
    return get_durable().scoped(project=config.project, environment=config.environment)


def engine_for(project: str, environment: str) -> oqronkit.Engine:
    """The engine seen from (project, environment), for the board's actions: the shared
    planes, a scope validated like the configured one, and a registry of its own, so
    ``engine_for(...).controller(name)`` operates a queue whose handler lives elsewhere."""
    return get_engine().scoped(project=project, environment=environment)


def reset() -> None:
    """Close the durable plane and forget the cached config (tests, setting changes)."""
    global _config, _engine
    with _lock:
        engine, _engine, _config = _engine, None, None
    if engine is not None:
        engine.close()


def _on_setting_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in ("OQRON", "BASE_DIR"):
        reset()


def connect_signals() -> None:
    """Reset on ``override_settings(OQRON=...)``; called from the app's ``ready()``."""
    from django.core.signals import setting_changed

    setting_changed.connect(_on_setting_changed, dispatch_uid="oqronboard.engine.reset")
