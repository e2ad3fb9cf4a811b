"""The lazily opened psycopg pool behind the PostgreSQL store and hot plane.

The pool opens on first use, so building a backend never touches the network;
``timeout`` (the ``backend_wait`` setting) bounds how long that first use, and any wait
for a free connection, may take before :class:`~oqronkit.errors.BackendUnavailable`.
While the server is down the pool tries to reconnect every 0.1 s at first, backing off
to once a second (psycopg_pool's own backoff doubles from 1 s without a cap); a caller
waiting for a connection gets the first one that succeeds. A pooled connection the server closed
(a restart) is noticed when it is checked out, and its idle siblings are replaced.
Driver errors are wrapped here: a value the server refuses is
:class:`~oqronkit.errors.InvalidRecord`, anything else
:class:`~oqronkit.errors.BackendUnavailable`, naming the server without its password.
"""

from __future__ import annotations

import logging
import random
import select
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg.types.json import set_json_loads
from psycopg_pool import ConnectionPool
from psycopg_pool.base import AttemptWithBackoff

from ...codec import decode_json
from ...config import redact_url
from ...errors import BackendUnavailable, InvalidRecord
from ..borrowed import borrowed
from . import arrays
from .lent import lent_connection

#: Reconnection attempts while the server is down: the first after 0.1 s, then doubling
#: up to about a second.
RECONNECT_FIRST_S = 0.1
RECONNECT_CAP_S = 1.0
T = TypeVar("T")


class _QuietReconnects(logging.Filter):
    """Lets one of psycopg_pool's "error connecting" warnings per pool through every
    30 s: at one attempt a second per connection they would flood the log, and the
    engine logs the outage itself."""

    EVERY_S = 30.0

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[object, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        if record.msg != "error connecting in %r: %s" or not args or not str(args[0]).startswith("oqronkit-"):
            return True
        pool, now = args[0], time.monotonic()
        if now - self._last.get(pool, -self.EVERY_S) < self.EVERY_S:
            return False
        self._last[pool] = now
        return True


logging.getLogger("psycopg.pool").addFilter(_QuietReconnects())


class _ShortBackoff(AttemptWithBackoff):
    INITIAL_DELAY = RECONNECT_FIRST_S

    def update_delay(self, now: float) -> None:
        super().update_delay(now)
        # Jittered so the pools of many workers do not knock in step.
        self.delay = min(self.delay, RECONNECT_CAP_S * random.uniform(0.8, 1.0))


class _Pool(ConnectionPool):
    """psycopg's pool with the short reconnection backoff above."""

    def _add_connection(self, attempt: AttemptWithBackoff | None, growing: bool = False) -> None:
        super()._add_connection(attempt or _ShortBackoff(timeout=self.reconnect_timeout), growing)

    def __del__(self) -> None:
        # A pool nobody closed is finalised by whichever thread the garbage collector
        # runs on, possibly holding a lock a maintenance thread needs: psycopg's own
        # finaliser joins them for up to 5 s each; ours only tells them to stop.
        if getattr(self, "_closed", True):
            return
        self._signal_stop_worker()


def _has_input(conn: psycopg.Connection[Any]) -> bool:
    """Whether an idle connection has something to read: only a server that closed it
    (a shutdown's FATAL message, or end of file) speaks to an idle pooled connection."""
    try:
        poller = select.poll()
        poller.register(conn.pgconn.socket, select.POLLIN)
    except (psycopg.Error, OSError, ValueError):
        return True  # no usable socket: let the real check say what is wrong
    return bool(poller.poll(0))


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
        the block is one transaction, committed when it succeeds. Where the application
        lent its connection for this database (:mod:`oqronkit.backends.borrowed`), that
        one instead, in a savepoint of the application's transaction."""
        lent = borrowed(self.url)
        try:
            if lent is not None:
                with lent_connection(lent) as conn:
                    yield conn
                return
            pool = self._open()
            with pool.connection() as conn:
                yield conn
        except psycopg.DataError as exc:
            # A value Postgres refuses (a \u0000 in a string, a non-numeric startedAt on
            # a run row, ...): bad input, not an outage.
            raise InvalidRecord(f"PostgreSQL refused a value: {exc}") from exc
        except psycopg.Error as exc:
            raise BackendUnavailable(f"PostgreSQL at {self.where} failed: {exc}") from exc

    def once_more_if_lost(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``work`` on a pooled connection, run once more on a new one when the first was
        found dead (the server restarted since it was last used); its dead idle siblings
        are dropped first, so the second try never meets another. Only for work that may
        safely run twice: a first try the server did commit is never answered."""
        lost: list[psycopg.Connection[Any]] = []
        try:
            with self.connection() as conn:
                lost.append(conn)
                return work(conn)
        except BackendUnavailable:
            if not lost or not lost[0].broken or borrowed(self.url) is not None:
                raise
        pool = self._pool
        if pool is not None:
            pool.drain()
        with self.connection() as conn:
            return work(conn)

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
        pool: ConnectionPool = _Pool(
            self.url,
            min_size=self._min_size,
            max_size=self._max_size,
            open=False,
            timeout=self.timeout,
            name=self._name,
            kwargs=self._kwargs,
            configure=self._configure_connection,
            check=self._check_connection,
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

    def _check_connection(self, conn: psycopg.Connection[Any]) -> None:
        """At checkout, a round trip only for a connection with unread input (a poll is
        cheap, a round trip per checkout is not); a dead one makes the pool drop its
        idle siblings too, which the same restart closed."""
        if not _has_input(conn):
            return
        try:
            ConnectionPool.check_connection(conn)
        except psycopg.Error:
            pool = self._pool
            if pool is not None:
                pool.drain()
            raise

    def _probe(self) -> str | None:
        # The pool's timeout says only "not ready"; one direct attempt tells the reason
        # (refused, unknown host, bad password, missing database).
        try:
            psycopg.connect(self.url, connect_timeout=2).close()
        except psycopg.Error as exc:
            return str(exc).strip()
        return None
