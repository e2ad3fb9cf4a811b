"""Notices that a crash emptied the UNLOGGED hot tables, from the connections that follow it.

PostgreSQL empties every UNLOGGED table when it recovers from a crash, so the broker
loses its ready jobs and leases at once. ``oqron_hot_epoch`` holds one row, an epoch
drawn by whoever wrote it; the row goes with the others. Each new pool connection reads
it (writing it when missing); a process that sees the row missing, or another epoch
than the one it knew, counts a reset, so its leader re-signals the durable plane's
waiting jobs and its heartbeat re-creates its leases at once, without waiting for
the reconciler's next pass.
"""

from __future__ import annotations

import logging
import secrets
import threading
from typing import Any

import psycopg

logger = logging.getLogger(__name__)

READ_OR_WRITE = b"""
WITH made AS (
    INSERT INTO oqron_hot_epoch (one, epoch) VALUES (true, %(epoch)s) ON CONFLICT DO NOTHING RETURNING epoch
)
SELECT epoch, true FROM made UNION ALL SELECT epoch, false FROM oqron_hot_epoch
"""


class EpochWatch:
    """The epoch this process last saw and how many resets it noticed (``resets``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.epoch: str | None = None
        self.resets = 0

    def check(self, conn: psycopg.Connection[Any], *, created: bool = False) -> None:
        """Read (or write) the epoch on a new autocommit connection; before the schema
        exists there is nothing to watch yet. ``created``: the schema script just ran, so
        a missing row is a new table's, not a crash's."""
        try:
            rows = conn.execute(READ_OR_WRITE, {"epoch": secrets.token_hex(8)}).fetchall()
            if not rows:  # a concurrent writer's row committed after our snapshot
                rows = conn.execute(READ_OR_WRITE, {"epoch": secrets.token_hex(8)}).fetchall()
        except psycopg.errors.UndefinedTable:
            return
        if not rows:
            return
        epoch, written = rows[0]
        with self._lock:
            known, self.epoch = self.epoch, epoch
            reset = epoch != known if known is not None else bool(written) and not created
            self.resets += reset
        if reset:
            logger.warning("the PostgreSQL hot plane's tables were emptied (a server crash); waiting jobs are "
                           "signalled again now", extra={"action": "hot.reset"})
