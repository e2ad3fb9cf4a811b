"""In-process broadcast for the memory hot plane: ``broadcast`` calls every handler
listening on the channel, in the caller's thread (the memory mode is one process, so
this reaches every listener there is)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from .types import Scope

logger = logging.getLogger(__name__)
Handler = Callable[[str | None], None]


class LocalSubscription:
    """One ``listen``: ready at once (nothing to confirm); ``close`` stops it."""

    def __init__(self, owner: LocalBroadcast, key: tuple[Scope, str], handler: Handler) -> None:
        self.ready = threading.Event()
        self.ready.set()
        self._owner, self.key, self.handler = owner, key, handler

    def close(self) -> None:
        with self._owner._broadcast_lock:
            subs = self._owner._broadcast_subs.get(self.key, [])
            if self in subs:
                subs.remove(self)


class LocalBroadcast:
    """``broadcast``/``listen`` of an in-process hot plane (mixed into MemoryHotPlane)."""

    supports_broadcast = True

    def __init__(self) -> None:
        self._broadcast_lock = threading.Lock()
        self._broadcast_subs: dict[tuple[Scope, str], list[LocalSubscription]] = {}

    def broadcast(self, scope: Scope, channel: str, message: str) -> None:
        with self._broadcast_lock:
            subs = list(self._broadcast_subs.get((scope, channel), ()))
        for sub in subs:
            try:
                sub.handler(message)
            except Exception:  # one handler's bug must not keep the message from the others
                logger.exception("broadcast handler failed", extra={"action": "hot.broadcast_handler_failed"})

    def listen(self, scope: Scope, channel: str, handler: Handler) -> LocalSubscription:
        sub = LocalSubscription(self, (scope, channel), handler)
        with self._broadcast_lock:
            self._broadcast_subs.setdefault((scope, channel), []).append(sub)
        return sub
