"""Django database aliases and the engine's database URLs, in both directions.

The engine's durable plane lives on a Django alias: :func:`engine_url` turns the alias's
settings into the URL the engine's own pool connects with, so a host keeps one
connection string (its ``DATABASES``). :func:`django_database` goes the other way, for
a project that starts from a URL (the standalone board's ``OQRON_DATABASE_URL``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from oqronkit import ConfigurationError
from oqronkit.config import redact_url, sqlite_path

# Seconds a Django SQLite connection waits for the write lock before "database is
# locked": the engine's workers write to the same file, and WAL lets readers through.
SQLITE_TIMEOUT_S = 20
_SQLITE_INIT = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL"
# Keys of a PostgreSQL alias's OPTIONS that Django reads itself: never libpq parameters.
_DJANGO_ONLY_OPTIONS = frozenset({"isolation_level", "server_side_binding", "pool", "assume_role", "cursor_factory"})
#: The database vendor each mode's durable plane needs (Django's ``connection.vendor``).
VENDOR_FOR_MODE = {"sqlite": "sqlite", "postgres": "postgresql", "redis-postgres": "postgresql"}


def engine_url(alias: str, settings_dict: Mapping[str, Any], vendor: str) -> str:
    """The engine URL of a Django alias: ``sqlite:////abs/path`` or ``postgresql://...``.

    Raises :class:`ConfigurationError` naming the alias for a database the engine cannot
    share (an in-memory SQLite database, a vendor other than SQLite or PostgreSQL).
    """
    if vendor == "sqlite":
        name = str(settings_dict.get("NAME") or "")
        if not name or name == ":memory:" or "mode=memory" in name:
            raise ConfigurationError(
                f"DATABASES[{alias!r}] is an in-memory SQLite database, which no worker process can "
                "open: give it a file NAME."
            )
        # Django opens a relative NAME from the working directory; so does this, once.
        return f"sqlite:///{os.path.abspath(name.removeprefix('file:'))}"
    if vendor == "postgresql":
        return _postgres_url(alias, settings_dict)
    raise ConfigurationError(
        f"DATABASES[{alias!r}] is a {vendor} database; the engine's tables need PostgreSQL or SQLite."
    )


def _postgres_url(alias: str, settings: Mapping[str, Any]) -> str:
    options: dict[str, str] = {}
    for key, value in dict(settings.get("OPTIONS") or {}).items():
        if key in _DJANGO_ONLY_OPTIONS:
            continue
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise ConfigurationError(
                f"DATABASES[{alias!r}]['OPTIONS'][{key!r}] is not a libpq connection parameter the "
                "engine's own pool can use (a string or a number)."
            )
        options[key] = str(value)
    host = str(settings.get("HOST") or "")
    if host.startswith("/"):  # a socket directory is a query parameter in a URL
        options["host"], host = host, ""
    user, password = str(settings.get("USER") or ""), str(settings.get("PASSWORD") or "")
    credentials = quote(user, safe="") + (":" + quote(password, safe="") if password else "")
    port = str(settings.get("PORT") or "")
    netloc = (credentials + "@" if credentials else "") + host + (":" + port if port else "")
    query = "?" + urlencode(options) if options else ""
    return f"postgresql://{netloc}/{quote(str(settings.get('NAME') or ''), safe='')}{query}"


def django_database(url: str) -> dict[str, Any]:
    """A Django ``DATABASES`` entry for a ``sqlite:///`` or ``postgresql://`` URL."""
    if url.startswith("sqlite:///"):
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": sqlite_path(url),
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
        f"Cannot derive a Django database from {redact_url(url)!r}: expected sqlite:/// or postgresql://."
    )


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
        raise ConfigurationError(f"The port in {redact_url(url)!r} is not a number.") from exc
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parts.path.lstrip("/")) or options.pop("dbname", ""),
        "USER": unquote(parts.username or "") or options.pop("user", ""),
        "PASSWORD": unquote(parts.password or "") or options.pop("password", ""),
        "HOST": host,
        "PORT": str(port) if port else options.pop("port", ""),
        "OPTIONS": options,
    }
