"""Broadcast messages over LISTEN/NOTIFY (the cache's L1 invalidations): the Postgres
hot plane's ``broadcast``/``listen`` (see :class:`~oqronkit.backends.protocols.Broadcasting`).

A NOTIFY is sent when its statement commits (autocommit here, so at once). One listener
thread per process owns one extra connection: it LISTENs to every channel asked for
(between two reads, so no thread ever shares the connection), then hands each
notification's payload to the channel's handlers. Notifications are lost while the
connection is down: on reconnecting, every handler is called with None first. Payloads
are limited by the server to under 8000 bytes; a longer message is refused (ValueError).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from ..sqlfiles import load_queries
from ..types import Scope
from .pool import LazyPool

logger = logging.getLogger(__name__)
_Q = load_queries("oqronkit.backends.postgres", "sql/broadcast.sql")
_SLICE_S = 0.1  # how soon a new channel is LISTENed to, and close() noticed
_RECONNECT_CAP_S = 1.0
MAX_PAYLOAD_BYTES = 7999
Handler = Callable[[str | None], None]


def broadcast_channel(scope: Scope, channel: str) -> str:
    """A fixed-length, always valid NOTIFY channel for any scope and channel name."""
    key = "\0".join((scope.project, scope.environment, channel)).encode()
    return "oqron_b_" + hashlib.sha1(key).hexdigest()[:24]


class Subscription:
    """One ``listen``: ``ready`` once the LISTEN ran; ``close`` stops it."""

    def __init__(self, owner: Listener, channel: str, handler: Handler) -> None:
        self.ready = threading.Event()
        self._owner, self.channel, self.handler = owner, channel, handler

    def close(self) -> None:
        self._owner.remove(self)


class Listener:
    def __init__(self, url: str, connect_timeout: float) -> None:
        self._url, self._timeout = url, connect_timeout
        self._lock = threading.Lock()
        self._subs: dict[str, list[Subscription]] = {}
        self._thread: threading.Thread | None = None
        self._closed = False

    def add(self, channel: str, handler: Handler) -> Subscription:
        sub = Subscription(self, channel, handler)
        with self._lock:
            self._subs.setdefault(channel, []).append(sub)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="oqronkit-pg-broadcast", daemon=True)
                self._thread.start()
        return sub

    def remove(self, sub: Subscription) -> None:
        with self._lock:
            subs = self._subs.get(sub.channel, [])
            if sub in subs:
                subs.remove(sub)

    def close(self) -> None:
        self._closed = True

    def _run(self) -> None:
        backoff = _SLICE_S
        while not self._closed:
            try:
                with psycopg.connect(self._url, autocommit=True, connect_timeout=int(self._timeout) or 1,
                                     application_name=f"oqronkit-broadcast-{os.getpid()}") as conn:
                    backoff = _SLICE_S
                    self._serve(conn)
            except Exception:  # the server went away, or a handler's thread-safety bug: reconnect
                logger.debug("broadcast listener reconnecting", exc_info=True,
                             extra={"action": "hot.broadcast_reconnect"})
            self._lost()
            if not self._closed:
                time.sleep(backoff)
                backoff = min(backoff * 2, _RECONNECT_CAP_S)

    def _serve(self, conn: psycopg.Connection[Any]) -> None:
        listening: set[str] = set()
        while not self._closed:
            with self._lock:
                pending = [(channel, subs) for channel, subs in self._subs.items()
                           if channel not in listening or any(not s.ready.is_set() for s in subs)]
            for channel, subs in pending:
                if channel not in listening:
                    conn.execute(sql.SQL(_Q["listen"]).format(channel=sql.Identifier(channel)))
                    listening.add(channel)
                for sub in subs:
                    sub.ready.set()
            for notify in conn.notifies(timeout=_SLICE_S):
                with self._lock:
                    subs = list(self._subs.get(notify.channel, ()))
                for sub in subs:
                    _call(sub, notify.payload)

    def _lost(self) -> None:
        with self._lock:
            subs = [sub for subs in self._subs.values() for sub in subs]
        for sub in subs:
            sub.ready.clear()
            _call(sub, None)  # notifications sent meanwhile are gone


def _call(sub: Subscription, payload: str | None) -> None:
    try:
        sub.handler(payload)
    except Exception:  # one handler's bug must not stop every other channel's messages
        logger.exception("broadcast handler failed", extra={"action": "hot.broadcast_handler_failed"})


class PostgresBroadcast:
    """The Postgres hot plane's ``broadcast`` and ``listen`` (mixed into PostgresHotPlane)."""

    supports_broadcast = True
    _pool: LazyPool
    _broadcast_listener: Listener | None = None
    _broadcast_pid: int = 0

    def broadcast(self, scope: Scope, channel: str, message: str) -> None:
        if len(message.encode("utf-8")) > MAX_PAYLOAD_BYTES:
            raise ValueError(f"A broadcast message is at most {MAX_PAYLOAD_BYTES} bytes on Postgres.")
        with self._pool.connection() as conn:
            conn.execute(_Q["broadcast"], {"channel": broadcast_channel(scope, channel), "message": message})

    def listen(self, scope: Scope, channel: str, handler: Handler) -> Subscription:
        if self._broadcast_listener is None or self._broadcast_pid != os.getpid():
            # A forked child inherits the parent's listener but not its thread.
            listener = Listener(self._pool.url, self._pool.connect_timeout)
            self._broadcast_listener, self._broadcast_pid = listener, os.getpid()
        return self._broadcast_listener.add(broadcast_channel(scope, channel), handler)

    def _close_broadcast(self) -> None:
        if self._broadcast_listener is not None:
            self._broadcast_listener.close()
