"""The Redis backends: the hot plane of the ``redis`` and ``redis-postgres`` modes and the
durable store of the ``redis`` mode. This package is the only place that imports the
``redis`` driver, and only when one of those modes asks for it."""

from __future__ import annotations

from ...errors import MissingDependency

try:
    import redis  # noqa: F401  (imported here first to name the missing extra)
except ImportError as exc:
    raise MissingDependency(
        f"The Redis backends need redis-py ({exc.name} is missing): pip install \"oqronkit[redis]\""
    ) from exc

from .hot import RedisHotPlane
from .store import RedisDurableStore

__all__ = ["RedisDurableStore", "RedisHotPlane"]
