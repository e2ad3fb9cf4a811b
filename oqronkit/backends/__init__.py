"""Backend selection. Drivers (psycopg, redis) are imported lazily, only by the backend
that needs them, so ``import oqronkit`` works with neither installed."""

from __future__ import annotations

from ..config import OqronConfig
from ..errors import ConfigurationError
from .protocols import DurableStore


def open_durable_store(config: OqronConfig) -> DurableStore:
    """The durable store the configured mode calls for (not yet started)."""
    if config.mode == "memory":
        from .memory import MemoryDurableStore

        return MemoryDurableStore()
    if config.mode == "sqlite":
        from .sqlite import SQLiteDurableStore

        return SQLiteDurableStore(config.sqlite_path)
    if config.mode in ("postgres", "redis-postgres"):
        from .postgres import PostgresDurableStore

        assert config.database_url is not None
        return PostgresDurableStore(config.database_url, connect_timeout=config.backend_wait)
    if config.mode == "redis":
        from .redis import RedisDurableStore

        assert config.redis_url is not None
        return RedisDurableStore(config.redis_url, check_eviction=not config.allow_redis_eviction,
                                 connect_timeout=config.backend_wait)
    raise ConfigurationError(
        f"Mode {config.mode!r} has no durable store in this version; use memory, sqlite, "
        "postgres, redis or redis-postgres."
    )
