"""The claim's floor of each queue in the ``postgres`` hot plane (``oqron_hot_heads``).

A transaction holding the xmin horizon keeps the ready index's entry of every job claimed
since it began, and a claim reading from the queue's head met them all (issue 38). Claims
read from the queue's floor instead, a position at or before every ready job:
whatever makes a job ready below it lowers it in the same statement
(``oqron_heads_lower_v1`` in hot_schema.sql, under the queue's advisory lock, shared);
:class:`FloorRaiser` raises it after a claim whose first job lay far past it, only
while no such statement runs (the lock, exclusive), so no job in flight ends up below
it and none is ever skipped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from ...errors import BackendUnavailable
from ..sqlfiles import load_queries
from .pool import LazyPool

_Q = load_queries("oqronkit.backends.postgres", "sql/hot_queries.sql")

#: Ords between the floor and a claim's first job that make raising the floor worth a
#: write (each one a dead version of the heads row while the horizon is held).
RAISE_GAP = 256
#: Seconds between one process's raises of one queue's floor, for the same reason.
RAISE_EVERY = 0.2


class FloorRaiser:
    """Raises queues' floors after claims, at most every :data:`RAISE_EVERY` per queue."""

    def __init__(self, pool: LazyPool) -> None:
        self._pool = pool
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str, str], float] = {}

    def after_claim(self, keys: dict[str, Any], rows: Sequence[tuple[Any, ...]]) -> None:
        """``rows``: the claim's (job_id, token, expires_at, rank, ord, floor rank, floor ord)."""
        if not rows:
            return
        first = min((row[3], row[4]) for row in rows)
        floor = (rows[0][5], rows[0][6])
        if first[0] == floor[0] and first[1] - floor[1] <= RAISE_GAP:
            return
        queue = (keys["project"], keys["environment"], keys["queue"])
        now = time.monotonic()
        with self._lock:
            if now - self._last.get(queue, -RAISE_EVERY) < RAISE_EVERY:
                return
            self._last[queue] = now
        rank, ord_ = max((row[3], row[4]) for row in rows)
        try:
            with self._pool.connection() as conn, conn.transaction():
                if conn.execute(_Q["heads_try"], keys).fetchone() == (True,):
                    conn.execute(_Q["heads_raise"], {**keys, "rank": rank, "ord": ord_})
        except BackendUnavailable:
            pass  # a floor left low only costs the next claims a longer walk
