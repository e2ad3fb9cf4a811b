"""Named caches whose entries live in the hot plane: :func:`oqronkit.cache`."""

from __future__ import annotations

from .cache import Cache, cache, caches_for
from .entries import InvalidCacheKey, InvalidCacheValue
from .fetch import FetchTimeout

__all__ = ["Cache", "FetchTimeout", "InvalidCacheKey", "InvalidCacheValue", "cache", "caches_for"]
