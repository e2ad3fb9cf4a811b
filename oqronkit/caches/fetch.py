"""``get_or_fetch``: one fetch per key at a time across every process.

In this process, callers of one key share one flight (the others wait on it). Across
processes, the flight's leader takes a short hot-plane lock (``cache:<name>:fetch:<key>``,
held at most ``fetch_lock_ttl``); a process that finds it taken serves the stale entry if
there is one, else polls until the fresh entry appears or the lock is free. Generations
are read before the fetch, so a fetch overlapping an invalidation writes a dead entry.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import OqronError
from ..hot import HotPlaneFacade
from .entries import Entry, encode_value
from .stats import CacheStats

Fetcher = Callable[[str], Any]

logger = logging.getLogger(__name__)
_POLL_FIRST_S = 0.005
_POLL_MAX_S = 0.05


class FetchTimeout(OqronError, TimeoutError):
    """A fetch held by another process did not finish within ``fetch_lock_ttl``."""


@dataclass
class Flight:
    done: threading.Event = field(default_factory=threading.Event)
    value: Any = None
    error: BaseException | None = None
    settled: bool = False  # False: a background refresh that fetched nothing (lock taken elsewhere)


class Flights:
    """This process's fetches in progress, by key (threads of one process share one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[str, Flight] = {}

    def join_or_lead(self, key: str) -> tuple[Flight, bool]:
        with self._lock:
            flight = self._flights.get(key)
            if flight is not None:
                return flight, False
            flight = self._flights[key] = Flight()
            return flight, True

    def land(self, key: str, flight: Flight) -> None:
        with self._lock:
            self._flights.pop(key, None)
        flight.done.set()

    def busy(self, key: str) -> bool:
        with self._lock:
            return key in self._flights


class Cache(Protocol):
    """What a fetch needs of :class:`oqronkit.caches.cache.Cache`."""

    name: str
    ttl_ms: int
    swr_ms: int
    sie_ms: int
    negative_ttl_ms: int | None
    fetch_lock_ttl_ms: int
    tags: tuple[str, ...]
    stats_counters: CacheStats
    flights: Flights
    clock: Callable[[], int]

    @property
    def hot(self) -> HotPlaneFacade: ...

    @property
    def max_value_bytes(self) -> int: ...

    def read(self, keys: Sequence[str]) -> dict[str, Entry]: ...

    def generations(self, key: str, tags: tuple[str, ...]) -> list[int]: ...

    def write(self, key: str, text: str, tags: tuple[str, ...], generations: list[int], *, ttl_ms: int,
              negative: bool) -> None: ...


def get_or_fetch(cache: Cache, key: str, fetcher: Fetcher, tags: tuple[str, ...]) -> Any:
    entry = cache.read([key]).get(key)
    now = cache.clock()
    if entry is not None and entry.is_fresh(now):
        cache.stats_counters.count("hits")
        return entry.value
    if entry is not None and now < entry.fresh_until + cache.swr_ms:
        cache.stats_counters.count("stale")
        if not cache.flights.busy(key):
            threading.Thread(target=_refresh, args=(cache, key, fetcher, tags), daemon=True,
                             name=f"oqron-cache-refresh-{cache.name}").start()
        return entry.value
    flight, leader = cache.flights.join_or_lead(key)
    if not leader:
        # The leader may wait out another process's lock, then fetch: twice the lock's ttl.
        if not flight.done.wait(2 * cache.fetch_lock_ttl_ms / 1000):
            raise FetchTimeout(f"Cache {cache.name!r}: the fetch of {key!r} took over fetch_lock_ttl.")
        if flight.error is not None:
            raise flight.error
        if not flight.settled:
            return get_or_fetch(cache, key, fetcher, tags)
        cache.stats_counters.count("hits")
        return flight.value
    try:
        flight.value, flight.settled = _lead(cache, key, fetcher, tags, entry), True
    except BaseException as exc:
        flight.error = exc
        raise
    finally:
        cache.flights.land(key, flight)
    return flight.value


def _lead(cache: Cache, key: str, fetcher: Fetcher, tags: tuple[str, ...], stale: Entry | None) -> Any:
    """Fetch under the hot-plane lock, or wait for the process holding it."""
    hot, lock, owner = cache.hot, f"cache:{cache.name}:fetch:{key}", uuid.uuid4().hex
    deadline = time.monotonic() + cache.fetch_lock_ttl_ms / 1000
    pause = _POLL_FIRST_S
    cache.stats_counters.count("misses")
    while True:
        if hot.acquire_lock(lock, owner, ttl_ms=cache.fetch_lock_ttl_ms, now=cache.clock()):
            try:
                fresh = cache.read([key]).get(key)  # written while we waited for the lock?
                if fresh is not None and fresh.is_fresh(cache.clock()):
                    return fresh.value
                return _fetch(cache, key, fetcher, tags, stale)
            finally:
                hot.release_lock(lock, owner)
        if stale is not None:
            cache.stats_counters.count("stale")
            return stale.value
        if time.monotonic() > deadline:
            raise FetchTimeout(f"Cache {cache.name!r}: another process's fetch of {key!r} took over fetch_lock_ttl.")
        time.sleep(pause)
        pause = min(pause * 2, _POLL_MAX_S)
        current = cache.read([key]).get(key)
        if current is not None and current.is_fresh(cache.clock()):
            return current.value


def _fetch(cache: Cache, key: str, fetcher: Fetcher, tags: tuple[str, ...], stale: Entry | None) -> Any:
    all_tags = tuple(dict.fromkeys([*cache.tags, *tags]))
    generations = cache.generations(key, all_tags)
    cache.stats_counters.count("fetches")
    try:
        value = fetcher(key)
    except Exception:
        cache.stats_counters.count("fetch_errors")
        if stale is not None and cache.clock() < stale.fresh_until + cache.sie_ms:
            logger.warning("cache %s: the fetch of %r failed; serving the stale value", cache.name, key,
                           exc_info=True, extra={"action": "cache.stale_if_error"})
            cache.stats_counters.count("stale")
            return stale.value
        raise
    if value is None:
        if cache.negative_ttl_ms is not None:
            cache.write(key, "null", all_tags, generations, ttl_ms=cache.negative_ttl_ms, negative=True)
        return None
    cache.write(key, encode_value(cache.name, value, cache.max_value_bytes), all_tags, generations,
                ttl_ms=cache.ttl_ms, negative=False)
    return value


def _refresh(cache: Cache, key: str, fetcher: Fetcher, tags: tuple[str, ...]) -> None:
    """Stale-while-revalidate's background fetch: only if no one else is fetching."""
    flight, leader = cache.flights.join_or_lead(key)
    if not leader:
        return
    hot, lock, owner = cache.hot, f"cache:{cache.name}:fetch:{key}", uuid.uuid4().hex
    try:
        if hot.acquire_lock(lock, owner, ttl_ms=cache.fetch_lock_ttl_ms, now=cache.clock()):
            try:
                flight.value, flight.settled = _fetch(cache, key, fetcher, tags, None), True
            finally:
                hot.release_lock(lock, owner)
    except Exception:
        logger.warning("cache %s: the background refresh of %r failed", cache.name, key, exc_info=True,
                       extra={"action": "cache.refresh_failed"})
    finally:
        cache.flights.land(key, flight)
