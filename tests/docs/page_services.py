"""A docs page's own test services: a fresh Postgres database and a Redis database number.

The shared servers are never flushed: a page gets a database created for it and dropped
after, and a Redis database number claimed with a key (so concurrent runs, other worktrees'
included, never share one) whose keys are deleted one by one when the page is done.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tests.services import require_postgres, require_redis

#: Redis database numbers for docs pages; the other tests use 0 and 15.
REDIS_DBS = range(4, 14)
CLAIM_KEY = "oqron-docs:claimed-by"
CLAIM_TTL_S = 1800


@contextlib.contextmanager
def page_services(names: tuple[str, ...]) -> Iterator[dict[str, str]]:
    """The environment variables (DATABASE_URL, REDIS_URL) of the services ``names``."""
    with contextlib.ExitStack() as stack:
        env: dict[str, str] = {}
        if "postgres" in names:
            env["DATABASE_URL"] = stack.enter_context(fresh_database())
        if "redis" in names:
            env["REDIS_URL"] = stack.enter_context(claimed_redis_db())
        yield env


@contextlib.contextmanager
def fresh_database() -> Iterator[str]:
    import psycopg

    base = require_postgres()
    name = f"oqron_docs_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # the name is ours, not user input
    try:
        parts = urlsplit(base)
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def claimed_redis_db() -> Iterator[str]:
    import redis

    base = require_redis()
    token = uuid.uuid4().hex
    for number in REDIS_DBS:
        url = urlunsplit(urlsplit(base)._replace(path=f"/{number}"))
        client = redis.Redis.from_url(url)
        try:
            if not client.set(CLAIM_KEY, token, nx=True, ex=CLAIM_TTL_S):
                continue
            _delete_all_but_claim(client)  # a crashed run's leftovers
            try:
                yield url
            finally:
                _delete_all_but_claim(client)
                if client.get(CLAIM_KEY) == token.encode():
                    client.delete(CLAIM_KEY)
            return
        finally:
            client.close()
    raise RuntimeError(f"every docs Redis database ({REDIS_DBS.start}..{REDIS_DBS.stop - 1}) is claimed")


def _delete_all_but_claim(client: Any) -> None:
    doomed = [key for key in client.scan_iter(count=1000) if key != CLAIM_KEY.encode()]
    for start in range(0, len(doomed), 1000):
        client.delete(*doomed[start:start + 1000])
