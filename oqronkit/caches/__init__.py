"""Named caches whose entries live in the hot plane: :func:`oqronkit.cache`."""

from __future__ import annotations

from .admin import CacheInfo, declared_caches, open_cache
from .cache import Cache, cache, caches_for
from .entries import InvalidCacheKey, InvalidCacheValue
from .fetch import FetchTimeout

__all__ = ["Cache", "CacheInfo", "FetchTimeout", "InvalidCacheKey", "InvalidCacheValue", "cache", "caches_for",
           "declared_caches", "open_cache"]
