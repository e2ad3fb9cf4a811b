"""The PostgreSQL durable store. This package is the only place that imports psycopg,
and only when the postgres or redis-postgres mode asks for it."""

from __future__ import annotations

from ...errors import MissingDependency

try:
    import psycopg  # noqa: F401  (imported here first to name the missing extra)
    import psycopg_pool  # noqa: F401
except ImportError as exc:
    raise MissingDependency(
        f"The PostgreSQL durable store needs psycopg 3 and its pool ({exc.name} is missing): "
        'pip install "oqronkit[postgres]"'
    ) from exc

from .hot import PostgresHotPlane
from .store import PostgresDurableStore

__all__ = ["PostgresDurableStore", "PostgresHotPlane"]
