"""Broadcast messages over Redis pub/sub (the cache's L1 invalidations): the Redis hot
plane's ``broadcast``/``listen`` (see :class:`~oqronkit.backends.protocols.Broadcasting`).

One listener thread per process reads every subscribed channel and calls each channel's
handlers with the message text. Messages are lost while the connection is down, so on
every reconnect each handler is called with None ("you may have missed some") before
the channels are subscribed again; a subscription's ``ready`` is set once Redis
confirms it, and cleared while it is down. On a Redis Cluster the channels are shard
channels (SPUBLISH / SSUBSCRIBE on the master of each channel's slot, :mod:`.sharded`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import cast

from ..types import Scope
from .connection import Client, call
from .keys import broadcast_channel
from .sharded import Subscriber, open_pubsub, publish

logger = logging.getLogger(__name__)
_SLICE_S = 0.5
_RECONNECT_BASE_S = 0.05
_RECONNECT_CAP_S = 1.0
Handler = Callable[[str | None], None]


class Subscription:
    """One ``listen``: ``ready`` once Redis confirmed the channel; ``close`` stops it."""

    def __init__(self, owner: Listener, channel: str, handler: Handler) -> None:
        self.ready = threading.Event()
        self._owner, self.channel, self.handler = owner, channel, handler

    def close(self) -> None:
        self._owner.remove(self)


class Listener:
    """The process's pub/sub connection and the thread that reads it."""

    def __init__(self, client: Client, where: str) -> None:
        self._client, self._where = client, where
        self._lock = threading.Lock()
        self._subs: dict[str, list[Subscription]] = {}
        self._pubsub: Subscriber | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    def add(self, channel: str, handler: Handler) -> Subscription:
        sub = Subscription(self, channel, handler)
        with self._lock:
            first = channel not in self._subs
            self._subs.setdefault(channel, []).append(sub)
            if not first and any(s.ready.is_set() for s in self._subs[channel]):
                sub.ready.set()
            pubsub = self._pubsub
        if pubsub is not None and first:
            call(self._where, "listen", lambda: pubsub.subscribe(channel))
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="oqronkit-redis-broadcast", daemon=True)
            self._thread.start()
        return sub

    def remove(self, sub: Subscription) -> None:
        with self._lock:
            subs = self._subs.get(sub.channel, [])
            if sub in subs:
                subs.remove(sub)

    def close(self) -> None:
        self._closed = True
        with self._lock:
            pubsub, self._pubsub = self._pubsub, None
        if pubsub is not None:
            _quietly_close(pubsub)

    def _connect(self) -> Subscriber:
        pubsub = open_pubsub(self._client)
        with self._lock:
            channels = list(self._subs)
            self._pubsub = pubsub
        if channels:
            pubsub.subscribe(*channels)
        return pubsub

    def _run(self) -> None:
        backoff, pubsub = _RECONNECT_BASE_S, cast("Subscriber | None", None)
        while not self._closed:
            try:
                pubsub = pubsub or self._connect()
                message = pubsub.get_message(timeout=_SLICE_S)
            except Exception:  # a dropped connection, or close() pulling the socket away
                self._lost(pubsub)
                pubsub = None
                if not self._closed:
                    time.sleep(backoff)
                    backoff = min(backoff * 2, _RECONNECT_CAP_S)
                continue
            backoff = _RECONNECT_BASE_S
            if message is not None:
                self._deliver(message)

    def _lost(self, pubsub: Subscriber | None) -> None:
        with self._lock:
            self._pubsub = None
            subs = [sub for subs in self._subs.values() for sub in subs]
        if pubsub is not None:
            _quietly_close(pubsub)
        for sub in subs:
            sub.ready.clear()
            self._call(sub, None)  # messages sent meanwhile are gone

    def _deliver(self, message: dict[str, object]) -> None:
        kind, channel, data = message.get("type"), message.get("channel"), message.get("data")
        with self._lock:
            subs = list(self._subs.get(channel, ())) if isinstance(channel, str) else []
        for sub in subs:
            if kind == "subscribe":
                sub.ready.set()
            elif kind == "message" and isinstance(data, str):
                self._call(sub, data)

    def _call(self, sub: Subscription, data: str | None) -> None:
        try:
            sub.handler(data)
        except Exception:  # a handler's bug must not stop every other channel's messages
            logger.exception("broadcast handler failed", extra={"action": "hot.broadcast_handler_failed"})


def _quietly_close(pubsub: Subscriber) -> None:
    try:
        pubsub.close()
    except Exception:  # closing a broken connection may fail in many ways; it is gone either way
        pass


class RedisBroadcast:
    """The Redis hot plane's ``broadcast`` and ``listen`` (mixed into RedisHotPlane)."""

    supports_broadcast = True
    _client: Client
    _where: str
    _listener: Listener | None = None
    _listener_pid: int = 0

    def broadcast(self, scope: Scope, channel: str, message: str) -> None:
        name = broadcast_channel(scope, channel)
        call(self._where, "broadcast", lambda: publish(self._client, name, message))

    def listen(self, scope: Scope, channel: str, handler: Handler) -> Subscription:
        if self._listener is None or self._listener_pid != os.getpid():
            # A forked child inherits the parent's listener but not its thread.
            self._listener, self._listener_pid = Listener(self._client, self._where), os.getpid()
        return self._listener.add(broadcast_channel(scope, channel), handler)

    def _close_broadcast(self) -> None:
        if self._listener is not None:
            self._listener.close()
