"""The one bridge from Django settings to the engine: ``OQRON`` in, the process's engine out.

Only this module reads the ``OQRON`` setting. Settings come first and the ``OQRON_*``
environment variables fill what ``OQRON`` leaves out, except the database: under Django
the durable plane always lives on the alias ``OQRON["DATABASE_ALIAS"]`` of
``DATABASES`` (``"default"``), so there is no second connection string to keep in step.
:func:`install`, called by the app's ``ready()``, makes this engine oqronkit's default
before any user code can enqueue.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import oqronkit
import oqronkit.engine
from oqronkit import ConfigurationError, DurablePlane, OqronConfig
from oqronkit.config import config_from_mapping, settings_from_env

from . import conf
from .databases import VENDOR_FOR_MODE, engine_url
from .transactions import transaction_lookup

#: Modes whose durable plane is not a SQL database a Django alias (and the board) can read.
NON_SQL_MODES = ("memory", "redis")
DEFAULT_ALIAS = "default"
ALIAS_KEY = "DATABASE_ALIAS"

_lock = threading.Lock()
_config: OqronConfig | None = None
_engine: oqronkit.Engine | None = None


def split_setting(oqron: object) -> tuple[str, dict[str, Any]]:
    """``OQRON``'s database alias and the engine's own keys (as written). Raises
    :class:`ConfigurationError` naming the setting for a value that is not a dict."""
    if oqron is None:
        oqron = {}
    if not isinstance(oqron, Mapping):
        raise ConfigurationError(
            f"The OQRON setting must be a dict such as {{'MODE': 'postgres'}}, got {type(oqron).__name__}."
        )
    values = {str(key): value for key, value in oqron.items() if str(key).lower() != ALIAS_KEY.lower()}
    alias = next((v for k, v in oqron.items() if str(k).lower() == ALIAS_KEY.lower()), DEFAULT_ALIAS)
    if not isinstance(alias, str) or not alias:
        raise ConfigurationError(f"OQRON['{ALIAS_KEY}'] must name an alias of DATABASES, got {alias!r}.")
    if any(key.lower() == "database_url" for key in values):
        raise ConfigurationError(
            "OQRON['DATABASE_URL'] is not used in a Django project: the engine's tables live in the "
            f"database of DATABASES[OQRON['{ALIAS_KEY}']] ('default' unless set). Remove DATABASE_URL, "
            f"and set OQRON['{ALIAS_KEY}'] to use another alias."
        )
    return alias, values


def build_config(oqron: object, environ: Mapping[str, str],
                 alias_url: Callable[[str, str], str]) -> OqronConfig:
    """The engine config of an ``OQRON`` setting: its keys first, then ``environ``'s
    ``OQRON_*`` variables; ``alias_url(alias, vendor)`` gives the database URL of the
    alias in a SQL mode. Raises :class:`ConfigurationError` naming what to fix."""
    alias, values = split_setting(oqron)
    from_env = settings_from_env({k: v for k, v in environ.items() if k != "OQRON_DATABASE_URL"})
    merged = {**from_env, **{key.lower(): value for key, value in values.items()}}
    vendor = VENDOR_FOR_MODE.get(str(merged.get("mode", "sqlite")))
    merged["database_url"] = alias_url(alias, vendor) if vendor is not None else None
    # The keys as written, so an error names the one the user typed.
    return config_from_mapping({**from_env, **values, "database_url": merged["database_url"]})


def alias_url(alias: str, vendor: str) -> str:
    """The engine URL of ``DATABASES[alias]``, which must be a ``vendor`` database."""
    from django.db import connections

    if alias not in connections.settings:
        known = ", ".join(sorted(connections.settings)) or "none"
        raise ConfigurationError(
            f"OQRON['{ALIAS_KEY}'] is {alias!r}, which is not an alias of DATABASES (known: {known})."
        )
    connection = connections[alias]
    if connection.vendor != vendor:
        raise ConfigurationError(
            f"The engine's mode needs a {vendor} database, but DATABASES[{alias!r}] is {connection.vendor}: "
            f"point OQRON['{ALIAS_KEY}'] at a {vendor} alias, or choose another OQRON['MODE']."
        )
    return engine_url(alias, connection.settings_dict, connection.vendor)


def database_alias() -> str:
    """The alias holding the engine's tables: the board's models read them there."""
    from django.conf import settings

    try:
        alias, _ = split_setting(getattr(settings, "OQRON", {}))
    except ConfigurationError:
        return DEFAULT_ALIAS  # get_config() raises it; the oqron.E001 check reports it
    return alias


# -- the process-wide engine objects -------------------------------------------------


def get_config() -> OqronConfig:
    """The validated config built from ``settings.OQRON`` and the environment (cached;
    raises :class:`ConfigurationError`, which the ``oqron.E001`` check reports)."""
    global _config
    config = _config
    if config is None:
        from django.conf import settings

        config = build_config(getattr(settings, "OQRON", {}), conf.environment(), alias_url)
        _config = config
    return config


def get_engine() -> oqronkit.Engine:
    """This project's engine, configured from its settings on first use: the queues
    declared in apps' ``oqron.py``, a view's ``add`` and the board's actions share it."""
    global _engine
    engine = _engine
    if engine is not None:
        return engine
    with _lock:
        if _engine is None:
            config = get_config()
            made = oqronkit.Engine(config)
            if config.database_url is not None:  # an add inside atomic() on the alias joins it
                made.host_transaction = transaction_lookup(database_alias(), config.database_url)
            _engine = made
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
    """Close the engine and forget the cached config (tests, setting changes)."""
    global _config, _engine
    with _lock:
        engine, _engine, _config = _engine, None, None
    if engine is not None:
        engine.close()


def _on_setting_changed(*, setting: str, **kwargs: Any) -> None:
    if setting in ("OQRON", "DATABASES"):
        reset()


def install() -> None:
    """Make this project's engine oqronkit's default and follow ``override_settings``;
    called from the app's ``ready()``."""
    from django.core.signals import setting_changed

    oqronkit.engine.provide_default(get_engine)
    setting_changed.connect(_on_setting_changed, dispatch_uid="oqronkit.contrib.django.engine.reset")
