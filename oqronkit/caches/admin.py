"""The caches' data API for tools such as the board: every cache any process declared
(its definition record and its statistics), and an operator's handle on one of them to
invalidate by tag or prefix (which reaches every process's L1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InvalidState
from ..namespaces import CACHE
from ..queues.queue import QueueHost
from .cache import Cache
from .stats import STAT_NAMES, stat_counter

_PAGE = 500


@dataclass(frozen=True, slots=True)
class CacheInfo:
    """One declared cache: its definition record's value and its statistics."""

    name: str
    definition: dict[str, Any]
    stats: dict[str, int]

    @property
    def hit_ratio(self) -> float | None:
        """Hits (stale serves included) over lookups; None before the first lookup."""
        served = self.stats["hits"] + self.stats["stale"]
        total = served + self.stats["misses"]
        return served / total if total else None


def declared_caches(engine: QueueHost) -> list[CacheInfo]:
    """Every cache declared in this (project, environment), by name, with statistics
    (one read of the hot plane for all of them)."""
    records: list[Any] = []
    cursor: str | None = None
    while True:
        page = engine.durable.list(CACHE, limit=_PAGE, cursor=cursor)
        records.extend(page.records)
        if (cursor := page.next_cursor) is None:
            break
    names = [stat_counter(record.id, kind) for record in records for kind in STAT_NAMES]
    found = engine.hot.get_counters(names) if names else {}
    return sorted((CacheInfo(record.id, dict(record.value),
                             {kind: found[stat_counter(record.id, kind)] for kind in STAT_NAMES})
                   for record in records), key=lambda info: info.name)


def open_cache(engine: QueueHost, name: str) -> Cache:
    """An operator's handle on the declared cache ``name`` (its options from the
    definition record; no fetcher): reads, invalidations and statistics, never a
    rewrite of the definition. :class:`InvalidState` when no process declared it."""
    record = engine.durable.get(CACHE, name)
    if record is None:
        raise InvalidState(f"No cache named {name!r} has been declared in this project and environment.")
    value = record.value
    return Cache(name, ttl=value["ttlMs"] / 1000, stale_while_revalidate=value["staleWhileRevalidateMs"] / 1000,
                 stale_if_error=value["staleIfErrorMs"] / 1000, ttl_jitter=value["ttlJitter"], tags=value["tags"],
                 negative_ttl=None if value["negativeTtlMs"] is None else value["negativeTtlMs"] / 1000,
                 max_value_bytes=value["maxValueBytes"], local=value["local"], engine=engine, declares=False)
