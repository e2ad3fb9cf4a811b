"""Real services for tests: Postgres and Redis, never mocks.

Outside CI a missing service skips its tests with a reason; under ``CI=true`` it fails
them, so CI can never pass by skipping.
"""

from __future__ import annotations

import os
import uuid

import pytest

POSTGRES_URL = os.environ.get("OQRON_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("OQRON_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def service_missing(what: str, exc: BaseException) -> None:
    message = f"{what} is not reachable ({exc.__class__.__name__}: {exc})"
    if in_ci():
        pytest.fail(f"{message}; CI=true, so service-backed tests fail instead of skipping.")
    pytest.skip(message)


def require_postgres() -> str:
    """The test database URL, after checking Postgres answers."""
    try:
        import psycopg

        with psycopg.connect(POSTGRES_URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # any failure means "not usable here"
        service_missing(f"PostgreSQL at {POSTGRES_URL}", exc)
    _trgm_in_public()
    return POSTGRES_URL


def _trgm_in_public() -> None:
    """pg_trgm in the public schema of the test database: the engine creates it in the
    first schema of the search path, and a test's private schema, dropped with CASCADE,
    would take the extension and every other test's trigram index with it."""
    import psycopg

    try:
        with psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=3) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public")
    except psycopg.Error:
        pass  # no contrib package or a concurrent creation: the engine falls back (tested)


def with_search_path(url: str, schema: str) -> str:
    """``url`` with libpq options that put ``schema`` first on the search path."""
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options=-csearch_path%3D{schema}"


def unique_name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def require_redis() -> str:
    """The test Redis URL, after checking Redis answers."""
    try:
        import redis

        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # any failure means "not usable here"
        service_missing(f"Redis at {REDIS_URL}", exc)
    return REDIS_URL


def drop_redis_project(url: str, project: str) -> int:
    """Delete every key of one test project (``oqron:<project>:*``): the shared Redis is
    never flushed, each test removes only what its own scope wrote."""
    import redis

    pattern = "oqron:" + "".join(f"[{c}]" if c in "*?[]\\" else c for c in project) + ":*"
    client = redis.Redis.from_url(url)
    try:
        doomed = list(client.scan_iter(match=pattern, count=1000))
        for start in range(0, len(doomed), 1000):
            client.delete(*doomed[start:start + 1000])
        return len(doomed)
    finally:
        client.close()
