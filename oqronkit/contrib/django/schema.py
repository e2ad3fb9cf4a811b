"""The engine's tables in a Django project's database, created by ``migrate``.

The engine owns its schema (``CREATE TABLE IF NOT EXISTS`` scripts it also runs on
start-up), so the migration calls the engine rather than spelling the tables twice:
the three durable tables, and in ``postgres`` and ``sqlite`` modes the hot plane's.
"""

from __future__ import annotations

import logging

import oqronkit
from oqronkit.engine import open_hot_plane

from . import engine

logger = logging.getLogger(__name__)
# Modes whose hot plane is tables of the same database.
TABLE_HOT_PLANES = ("sqlite", "postgres")


def create_tables(alias: str) -> list[str]:
    """Create the engine's tables when ``alias`` holds them; what was created, by plane
    (nothing for another alias, or a mode whose durable plane is not SQL)."""
    if alias != engine.database_alias():
        return []
    config = engine.get_config()
    if config.mode in engine.NON_SQL_MODES:
        return []
    durable = oqronkit.open_durable(config)  # start() creates the tables, refuses a v1 layout
    durable.close()
    planes = ["durable"]
    if config.mode in TABLE_HOT_PLANES:
        hot = open_hot_plane(config)
        try:
            hot.ensure_ready()
        finally:
            hot.close()
        planes.append("hot")
    logger.info("engine tables ready in DATABASES[%r]: %s", alias, ", ".join(planes),
                extra={"action": "django.migrate.tables"})
    return planes
