"""Retention: expired rows (``expires_at``) and old run history, in bounded batches."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..clock import now_ms
from ..namespaces import RUNS
from ..topics.retention import prune_topics

if TYPE_CHECKING:
    from ..engine import Engine

logger = logging.getLogger(__name__)
DAY_MS = 24 * 3600 * 1000


def prune(engine: Engine, *, run_retention_days: int = 30, batch: int = 10_000) -> int:
    removed = engine.durable.prune_expired()
    cutoff = now_ms() - run_retention_days * DAY_MS
    removed += engine.durable.prune_older_than(RUNS, cutoff_ms=cutoff, limit=batch)
    removed += prune_topics(engine.durable, batch=batch)
    if removed:
        logger.info("retention removed %d row(s)", removed, extra={"action": "retention.pruned"})
    return removed
