"""A cache's statistics as hot-plane counters: each process adds its own counts with
an atomic ``incr`` (never read-modify-write), batched so a hit costs no extra round trip."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ..hot import HotPlaneFacade

STAT_NAMES = ("hits", "misses", "stale", "fetches", "fetch_errors")
#: Counts a process holds before adding them to the shared counters; a crash loses at
#: most this much (statistics, never entries).
FLUSH_INTERVAL_S = 1.0


def stat_counter(cache: str, kind: str) -> str:
    """The hot-plane counter of one statistic of one cache."""
    return f"cache:{cache}:stat:{kind}"


class CacheStats:
    """Per process: counts since the last flush, added to ``cache:<name>:stat:<kind>``."""

    def __init__(self, cache: str, hot: Callable[[], HotPlaneFacade]) -> None:
        self._names = {kind: stat_counter(cache, kind) for kind in STAT_NAMES}
        self._hot = hot
        self._pending = dict.fromkeys(STAT_NAMES, 0)
        self._lock = threading.Lock()
        self._flushed_at = time.monotonic()

    def count(self, kind: str, by: int = 1) -> None:
        with self._lock:
            self._pending[kind] += by
            due = time.monotonic() - self._flushed_at >= FLUSH_INTERVAL_S
        if due:
            self.flush()

    def flush(self) -> None:
        """Add this process's pending counts to the shared counters."""
        with self._lock:
            pending, self._pending = self._pending, dict.fromkeys(STAT_NAMES, 0)
            self._flushed_at = time.monotonic()
        hot = self._hot()
        left = {kind: by for kind, by in pending.items() if by}
        try:
            for kind in list(left):
                hot.incr(self._names[kind], left[kind])
                del left[kind]
        except Exception:
            with self._lock:  # put the unsent counts back: the next flush retries them
                for kind, by in left.items():
                    self._pending[kind] += by
            raise

    def read(self) -> dict[str, int]:
        """Every process's counts (this one's flushed first) and the hit ratio's parts."""
        self.flush()
        found = self._hot().get_counters(list(self._names.values()))
        return {kind: found[name] for kind, name in self._names.items()}
