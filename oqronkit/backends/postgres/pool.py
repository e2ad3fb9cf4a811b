"""The lazily opened psycopg pool behind the PostgreSQL store and hot plane.

The pool opens on first use, so building a backend never touches the network;
``timeout`` bounds how long that first use (and any wait for a free connection) may
take before :class:`~oqronkit.errors.BackendUnavailable`. Driver errors are wrapped
here: a value the server refuses is :class:`~oqronkit.errors.InvalidRecord`, anything
else :class:`~oqronkit.errors.BackendUnavailable`, naming the server without its
password.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.types.json import set_json_loads
from psycopg_pool import ConnectionPool

from ...codec import decode_json
from ...config import redact_url
from ...errors import BackendUnavailable, InvalidRecord
from . import arrays


class LazyPool:
    """One psycopg :class:`ConnectionPool`, opened on first use and closed for good by
    :meth:`close`. ``label`` names the backend in errors ("store", "hot plane")."""

    def __init__(
        self,
        url: str,
        name: str,
        *,
        label: str,
        min_size: int,
        max_size: int,
        timeout: float,
        autocommit: bool = False,
        configure: Callable[[psycopg.Connection[Any]], None] | None = None,
    ) -> None:
        self.url = url
        self.where = redact_url(url)
        self.timeout = timeout
        #: libpq rounds connect_timeout below 2 seconds up to 2.
        self.connect_timeout = max(2, round(timeout))
        self._name = name
        self._label = label
        self._min_size = min_size
        self._max_size = max_size
        self._kwargs: dict[str, Any] = {"connect_timeout": self.connect_timeout}
        if autocommit:
            self._kwargs["autocommit"] = True
        self._configure = configure
        self._pool: ConnectionPool | None = None
        self._lock = threading.Lock()
        self.closed = False

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection, with driver errors turned into ours. Without autocommit
        the block is one transaction, committed when it succeeds."""
        pool = self._open()
        try:
            with pool.connection() as conn:
                yield conn
        except psycopg.DataError as exc:
            # A value Postgres refuses (a \u0000 in a string, a non-numeric startedAt on
            # a run row, ...): bad input, not an outage.
            raise InvalidRecord(f"PostgreSQL refused a value: {exc}") from exc
        except psycopg.Error as exc:
            raise BackendUnavailable(f"PostgreSQL at {self.where} failed: {exc}") from exc

    def closed_error(self) -> BackendUnavailable:
        return BackendUnavailable(f"The PostgreSQL {self._label} for {self.where} is closed.")

    def close(self) -> None:
        with self._lock:
            self.closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def _open(self) -> ConnectionPool:
        pool = self._pool
        if pool is not None:
            return pool
        with self._lock:
            if self.closed:
                raise self.closed_error()
            if self._pool is None:
                self._pool = self._new_pool()
            return self._pool

    def _new_pool(self) -> ConnectionPool:
        pool: ConnectionPool = ConnectionPool(
            self.url,
            min_size=self._min_size,
            max_size=self._max_size,
            open=False,
            timeout=self.timeout,
            name=self._name,
            kwargs=self._kwargs,
            configure=self._configure_connection,
        )
        try:
            pool.open(wait=True, timeout=self.timeout)
        except psycopg.Error as exc:
            pool.close()
            raise BackendUnavailable(
                f"PostgreSQL at {self.where} is unreachable after {self.timeout:g}s "
                f"({self._probe() or exc}). Check the OQRON database URL and that the server is up."
            ) from exc
        return pool

    def _configure_connection(self, conn: psycopg.Connection[Any]) -> None:
        arrays.register(conn)
        set_json_loads(decode_json, conn)  # json and jsonb columns: orjson where exact
        if self._configure is not None:
            self._configure(conn)

    def _probe(self) -> str | None:
        # The pool's timeout says only "not ready"; one direct attempt tells the reason
        # (refused, unknown host, bad password, missing database).
        try:
            psycopg.connect(self.url, connect_timeout=2).close()
        except psycopg.Error as exc:
            return str(exc).strip()
        return None
