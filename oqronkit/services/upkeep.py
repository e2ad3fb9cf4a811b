"""Table upkeep: ANALYZE / VACUUM where autovacuum lags, for the planes that have
tables (PostgreSQL; see ``oqronkit/backends/postgres/upkeep.py`` for why)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..errors import OqronError

if TYPE_CHECKING:
    from ..engine import Engine

logger = logging.getLogger(__name__)


def table_upkeep(engine: Engine) -> list[str]:
    """Run each plane's upkeep; returns what was done. Errors are logged, not raised:
    upkeep only helps, and the next round tries again."""
    return _each_plane(engine, "upkeep")


def horizon_upkeep(engine: Engine) -> list[str]:
    """VACUUM each plane's tables as soon as a transaction that held the xmin horizon ended."""
    return _each_plane(engine, "after_horizon")


def _each_plane(engine: Engine, method: str) -> list[str]:
    done: list[str] = []
    for plane in ("durable", "hot"):
        try:
            # Inside the try: opening a plane that is down raises too, and this runs on a
            # thread of its own, where an escaping error would only print a traceback.
            backend = engine.durable.store if plane == "durable" else engine.hot.plane
            upkeep = getattr(backend, method, None)
            if upkeep is not None:
                done += upkeep()
        except OqronError as exc:
            logger.warning("table upkeep of the %s plane failed: %s", plane, exc, extra={"action": "upkeep.failed"})
    if done:
        logger.info("table upkeep: %s", ", ".join(done), extra={"action": "upkeep.done"})
    return done
