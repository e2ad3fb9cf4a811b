"""``oqronkit.cache``: a named cache whose entries live in the hot plane only (its
definition in the durable ``cache`` namespace), with stale serving, tag and prefix
invalidation, one fetch per key at a time across processes, and an optional L1."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from typing import Any

from ..clock import now_ms
from ..declared import DeclaredByName, OnEngine, put_definition
from ..errors import ConfigurationError, InvalidJob
from ..hot import HotPlaneFacade
from ..namespaces import CACHE
from ..queues.backoff import to_ms
from ..queues.queue import QueueHost, Registry
from . import fetch
from .entries import (
    PREFIX_SEPARATOR,
    Entry,
    check_key,
    check_tags,
    encode_value,
    entries_group,
    generation_names,
    jittered,
    pack,
    prefix_counter,
    tag_counter,
    unpack,
)
from .fetch import Fetcher
from .local import LocalCache, message
from .stats import CacheStats

_CACHES: DeclaredByName[Cache] = DeclaredByName()
#: How often (ms) each process drops its cache's lapsed entries from the hot plane.
PRUNE_INTERVAL_MS = 60_000


class Cache(OnEngine):
    """A named cache of JSON values (see docs/how-to/rate-limits-and-caches.md)."""

    def __init__(self, name: str, *, ttl: float | timedelta, fetcher: Fetcher | None = None,
                 stale_while_revalidate: float | timedelta = 0, stale_if_error: float | timedelta = 0,
                 ttl_jitter: float = 0.1, tags: Iterable[str] = (), negative_ttl: float | timedelta | None = None,
                 max_value_bytes: int | None = None, local: int | None = None,
                 local_ttl: float | timedelta | None = None, fetch_lock_ttl: float | timedelta = 10,
                 engine: QueueHost | None = None, clock: Callable[[], int] = now_ms,
                 declares: bool = True) -> None:
        if not isinstance(name, str) or not name or len(name) > 200 or any(c in name for c in "\x00:{}"):
            raise ConfigurationError(f"Cache name {name!r}: 1-200 characters, none of ':', '{{', '}}' or NUL.")
        self.name = name
        self.ttl_ms = _positive_ms(name, "ttl", ttl)
        self.swr_ms = _ms(name, "stale_while_revalidate", stale_while_revalidate)
        self.sie_ms = _ms(name, "stale_if_error", stale_if_error)
        self.negative_ttl_ms = None if negative_ttl is None else _positive_ms(name, "negative_ttl", negative_ttl)
        if isinstance(ttl_jitter, bool) or not isinstance(ttl_jitter, int | float) or not 0 <= ttl_jitter < 1:
            raise ConfigurationError(f"Cache {name!r}: ttl_jitter must be a fraction from 0 to below 1.")
        self.ttl_jitter = float(ttl_jitter)
        self.tags = check_tags(name, tags)
        if max_value_bytes is not None and (not isinstance(max_value_bytes, int) or max_value_bytes < 1):
            raise ConfigurationError(f"Cache {name!r}: max_value_bytes must be a positive integer.")
        self._max_value_bytes = max_value_bytes
        if local is not None and (not isinstance(local, int) or isinstance(local, bool) or local < 1):
            raise ConfigurationError(f"Cache {name!r}: local must be None or the L1's entry count (>= 1).")
        self.local_size = local
        local_ttl_ms = None if local_ttl is None else _positive_ms(name, "local_ttl", local_ttl)
        self.local = LocalCache(local, local_ttl_ms) if local is not None else None
        self.fetch_lock_ttl_ms = _positive_ms(name, "fetch_lock_ttl", fetch_lock_ttl)
        if fetcher is not None and not callable(fetcher):
            raise ConfigurationError(f"Cache {name!r}: fetcher must be callable.")
        self.fetcher = fetcher
        self._engine = engine
        self.clock = clock  # epoch ms; every hot-plane call takes its ``now`` from it (tests pass a fake)
        # declares=False: an operator's handle (the board) on a cache its workers declare,
        # which never rewrites the definition record (admin.open_cache builds one).
        self._declared = not declares
        self._prune_at = 0
        self._lock = threading.Lock()
        self.group = entries_group(name)
        self.stats_counters = CacheStats(name, lambda: self.hot)
        self.flights = fetch.Flights()
        if declares:
            caches_for(self.registry)[name] = self

    def __repr__(self) -> str:
        return f"<Cache {self.name!r} ttl={self.ttl_ms}ms>"

    @property
    def hot(self) -> HotPlaneFacade:
        self._declare()
        return self.engine.hot

    @property
    def max_value_bytes(self) -> int:
        return self._max_value_bytes or self.engine.config.max_record_bytes

    # -- reads -------------------------------------------------------------------------

    def get(self, key: str, default: Any = None) -> Any:
        """The fresh value of ``key``, or ``default``. A negative entry reads as None."""
        check_key(self.name, key)
        entry = self.read([key]).get(key)
        if entry is not None and entry.is_fresh(self.clock()):
            self.stats_counters.count("hits")
            return entry.value
        self.stats_counters.count("misses")
        return default

    def get_many(self, keys: Sequence[str]) -> dict[str, Any]:
        """The fresh values among ``keys`` (missing keys are left out), in two round trips."""
        for key in keys:
            check_key(self.name, key)
        now = self.clock()
        found = {key: entry.value for key, entry in self.read(keys).items() if entry.is_fresh(now)}
        self.stats_counters.count("hits", len(found))
        self.stats_counters.count("misses", len(set(keys)) - len(found))
        return found

    def get_or_fetch(self, key: str, fetcher: Fetcher | None = None, *, tags: Iterable[str] = ()) -> Any:
        """The value of ``key``, fetched (``fetcher(key)``, else the cache's) when missing:
        one fetch per key at a time across every process, waiters served the stale
        value or the fresh one; see :mod:`oqronkit.caches.fetch`."""
        check_key(self.name, key)
        chosen = fetcher or self.fetcher
        if chosen is None:
            raise ConfigurationError(f"Cache {self.name!r}: get_or_fetch needs a fetcher (here or on the cache).")
        return fetch.get_or_fetch(self, key, chosen, check_tags(self.name, tags))

    def read(self, keys: Sequence[str]) -> dict[str, Entry]:
        """The entries among ``keys`` still servable (fresh or stale) and written under
        the current generations: the invalidated ones read as absent."""
        now, hot, l1 = self.clock(), self.hot, self.local
        found: dict[str, Entry] = {}
        epoch = 0
        if l1 is not None:
            l1.connect(hot, self.group)
            epoch = l1.epoch  # noted before the hot read: an invalidation during it moves it
            found = {key: entry for key in keys if (entry := l1.get(key, now)) is not None}
        missing = [key for key in dict.fromkeys(keys) if key not in found]
        if not missing:
            return found
        # One round trip with the generations every entry has (the cache's tags); a
        # second only for entries written with tags of their own.
        guessed = {name: None for key in missing for name in generation_names(self.name, key, self.tags)}
        texts, current = hot.kv_get_with_counters(self.group, missing, list(guessed), now)
        entries = {key: entry for key, text in texts.items()
                   if (entry := unpack(text)) is not None and now < entry.stale_until}
        if not entries:
            return found
        wanted = {key: generation_names(self.name, key, entry.tags) for key, entry in entries.items()}
        extra = {name: None for names in wanted.values() for name in names if name not in current}
        if extra:
            current |= hot.get_counters(list(extra))
        valid = {key: entry for key, entry in entries.items()
                 if entry.generations == tuple(current[name] for name in wanted[key])}
        if l1 is not None:
            for key, entry in valid.items():
                l1.put(key, entry, now, epoch)
        return found | valid

    def _announce(self, **what: object) -> None:
        """Tell every process's L1 (this one's at once) what changed."""
        if self.local is None:
            return
        text = message(**what)
        self.local.apply(text)
        self.hot.broadcast(self.group, text)

    # -- writes ------------------------------------------------------------------------

    def set(self, key: str, value: Any, *, ttl: float | timedelta | None = None, tags: Iterable[str] = ()) -> None:
        """Store ``value`` (JSON) under ``key``; :class:`InvalidCacheValue` when it cannot be."""
        check_key(self.name, key)
        text = encode_value(self.name, value, self.max_value_bytes)
        ttl_ms = self.ttl_ms if ttl is None else _positive_ms(self.name, "ttl", ttl)
        all_tags = check_tags(self.name, [*self.tags, *check_tags(self.name, tags)])
        self.write(key, text, all_tags, self.generations(key, all_tags), ttl_ms=ttl_ms, negative=False)

    def generations(self, key: str, tags: tuple[str, ...]) -> list[int]:
        """The current generations an entry of ``key`` with ``tags`` records (read
        before a fetch, so a fetch overlapping an invalidation writes a dead entry)."""
        names = generation_names(self.name, key, tags)
        found = self.hot.get_counters(names)
        return [found[name] for name in names]

    def write(self, key: str, text: str, tags: tuple[str, ...], generations: list[int], *, ttl_ms: int,
              negative: bool) -> None:
        now = self.clock()
        fresh_until = now + jittered(ttl_ms, self.ttl_jitter)
        stale_until = fresh_until + max(self.swr_ms, self.sie_ms)
        stored = pack(text, fresh_until=fresh_until, stale_until=stale_until, tags=tags, generations=generations,
                      negative=negative)
        self.hot.kv_set(self.group, {key: stored}, ttl_ms=stale_until - now, now=now)
        self._announce(keys=[key])
        if now >= self._prune_at:  # lapsed entries are not pruned by every plane's kv_set
            self._prune_at = now + PRUNE_INTERVAL_MS
            self.hot.kv_prune(self.group, now)

    def delete(self, *keys: str) -> None:
        """Remove ``keys`` (absent keys are fine)."""
        for key in keys:
            check_key(self.name, key)
        self.hot.kv_delete(self.group, list(keys))
        self._announce(keys=list(keys))

    def invalidate_tags(self, *tags: str) -> None:
        """Every entry carrying one of ``tags`` reads as absent from now on: one counter
        increment per tag, whatever the number of entries."""
        checked = check_tags(self.name, tags)
        for tag in checked:
            self.hot.incr(tag_counter(self.name, tag))
        self._announce(tags=list(checked))

    def invalidate_prefix(self, prefix: str) -> None:
        """Every key starting with ``prefix`` reads as absent from now on. The prefix ends
        at a separator (``"user:42:"``): one counter increment, no scan."""
        if not isinstance(prefix, str) or not prefix.endswith(PREFIX_SEPARATOR) or "\x00" in prefix:
            raise ConfigurationError(f"Cache {self.name!r}: a prefix must end with {PREFIX_SEPARATOR!r}, "
                                     f"got {prefix!r}.")
        self.hot.incr(prefix_counter(self.name, prefix))
        self._announce(prefix=prefix)

    def clear(self) -> None:
        """Every entry reads as absent from now on (one counter increment)."""
        self.hot.incr(generation_names(self.name, "", ())[0])
        self._announce(all=True)

    # -- statistics and declaration ----------------------------------------------------

    def stats(self) -> dict[str, int]:
        """Hits, misses, stale serves, fetches and fetch errors of every process."""
        return self.stats_counters.read()

    def _declare(self) -> None:
        """Record the cache's definition once per process (the board lists it)."""
        if self._declared:
            return
        with self._lock:
            if self._declared:
                return
            put_definition(self.engine.durable, CACHE, self.name, {
                "name": self.name, "ttlMs": self.ttl_ms, "staleWhileRevalidateMs": self.swr_ms,
                "staleIfErrorMs": self.sie_ms, "ttlJitter": self.ttl_jitter, "tags": list(self.tags),
                "negativeTtlMs": self.negative_ttl_ms, "maxValueBytes": self._max_value_bytes,
                "local": self.local_size})
            self._declared = True


def _ms(cache: str, what: str, value: float | timedelta) -> int:
    try:
        return to_ms(value, what=f"Cache {cache!r}: {what}") or 0
    except InvalidJob as exc:  # a cache's bad option is a configuration error, not a job's
        raise ConfigurationError(str(exc)) from exc


def _positive_ms(cache: str, what: str, value: float | timedelta) -> int:
    ms = _ms(cache, what, value)
    if ms < 1:
        raise ConfigurationError(f"Cache {cache!r}: {what} must be a positive duration, got {value!r}.")
    return ms


def caches_for(registry: Registry) -> dict[str, Cache]:
    """The caches declared against ``registry``, by name."""
    return _CACHES.of(registry)


def cache(name: str, **options: Any) -> Cache:
    """Declare (or look up) a cache on the default engine."""
    return _CACHES.declare_or_get(Cache, name, options)
