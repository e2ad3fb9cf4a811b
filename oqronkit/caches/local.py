"""A cache's optional in-process L1: a bounded LRU of decoded entries in front of the
hot plane, kept coherent by invalidation messages.

Where the hot plane broadcasts (Redis: pub/sub; Postgres: LISTEN/NOTIFY; memory: in
process), every write,
delete and invalidation of the cache sends a message and every process's L1 drops what
it names; an entry read from the hot plane is kept only if no message arrived while it
was read (the ``epoch`` check), so a read racing an invalidation never keeps the old
value. A lost message (a reconnect) drops the whole L1, and while the subscription is
not confirmed the L1 is bypassed. Where the plane cannot broadcast (SQLite) only this
process's own changes reach its L1: entries live at most ``local_ttl`` (default 1 s).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterable

from ..backends.protocols import BroadcastSubscription
from ..hot import HotPlaneFacade
from .entries import Entry

#: How long an L1 entry lives (ms) where invalidations arrive by message / where they cannot.
BROADCAST_LOCAL_TTL_MS = 60_000
UNBROADCAST_LOCAL_TTL_MS = 1_000
#: How long the first read of a cache waits for its invalidation subscription.
SUBSCRIBE_WAIT_S = 2.0


class LocalCache:
    """Bounded LRU of entries, each kept until ``min(stale_until, read + ttl)``."""

    def __init__(self, size: int, ttl_ms: int | None) -> None:
        self.size = size
        self._ttl_ms = ttl_ms
        self._lock = threading.Lock()
        self._connect_lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[Entry, int]] = OrderedDict()
        self.epoch = 0  # moved by every invalidation, so a racing read is not kept
        self._connected = False
        self._subscription: BroadcastSubscription | None = None
        self._ready: threading.Event | None = None
        self.hits = 0

    def connect(self, hot: HotPlaneFacade, channel: str) -> None:
        """Subscribe to the cache's invalidations, once (when the plane can broadcast)."""
        if self._connected:
            return
        with self._connect_lock:
            if self._connected:
                return
            sub = self._subscription = hot.listen(channel, self.apply)
            self._ready = sub.ready if sub is not None else None
            if self._ttl_ms is None:
                self._ttl_ms = BROADCAST_LOCAL_TTL_MS if sub is not None else UNBROADCAST_LOCAL_TTL_MS
            self._connected = True  # last: usable() must never see it before _ready
        if sub is not None:
            # Once per process and cache: the first reads can use the L1 (after this
            # wait, reads bypass it until the subscription is confirmed).
            sub.ready.wait(SUBSCRIBE_WAIT_S)

    @property
    def usable(self) -> bool:
        """False while a subscription is not confirmed: a message could be missed."""
        return self._connected and (self._ready is None or self._ready.is_set())

    def get(self, key: str, now: int) -> Entry | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            if now >= found[1]:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return found[0]

    def put(self, key: str, entry: Entry, now: int, epoch: int) -> None:
        """Keep ``entry`` read when the epoch was ``epoch``, unless an invalidation came since."""
        ttl = self._ttl_ms or UNBROADCAST_LOCAL_TTL_MS
        with self._lock:
            if epoch != self.epoch or not self.usable:
                return
            self._entries[key] = (entry, min(entry.stale_until, now + ttl))
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def apply(self, message: str | None) -> None:
        """Drop what an invalidation message names (everything for None or an unknown one)."""
        try:
            parsed = json.loads(message) if message is not None else {}
        except ValueError:
            parsed = {}
        with self._lock:
            self.epoch += 1
            if "keys" in parsed:
                for key in parsed["keys"]:
                    self._entries.pop(key, None)
            elif "tags" in parsed:
                tags = set(parsed["tags"])
                self._drop(key for key, (entry, _) in self._entries.items() if tags.intersection(entry.tags))
            elif "prefix" in parsed:
                self._drop(key for key in self._entries if key.startswith(parsed["prefix"]))
            else:
                self._entries.clear()

    def _drop(self, keys: Iterable[str]) -> None:
        for key in list(keys):
            del self._entries[key]


#: Longest message sent (UTF-8 bytes): Postgres refuses NOTIFY payloads of 8000 or more.
MAX_MESSAGE_BYTES = 7000


def message(**what: object) -> str:
    """An invalidation message: ``keys=[...]``, ``tags=[...]``, ``prefix=...`` or ``all=True``;
    one too long to send becomes ``all`` (every L1 drops the cache's entries)."""
    text = json.dumps(what, ensure_ascii=False, separators=(",", ":"))
    return text if len(text.encode("utf-8")) <= MAX_MESSAGE_BYTES else '{"all":true}'
