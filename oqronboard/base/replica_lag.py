"""How far the board's read replica trails the primary, measured cheaply and cached.

One measurement is two table-free queries (``sql/replica.sql``): the primary's WAL
position, then on the standby the bytes its replay trails that position and the age of
the last transaction it replayed. The result is kept per process for
``OQRON_READ_REPLICA_CHECK_SECONDS`` (default 2), so a board polled by many viewers
asks the replica a couple of times a few seconds, not once per request.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass

from django.db import DatabaseError, connections

from oqronkit.backends.sqlfiles import load_queries

from . import conf

logger = logging.getLogger(__name__)

QUERIES = load_queries("oqronboard.base", "sql/replica.sql")
# How long a measurement waits for a replay in flight before it believes a lag.
SETTLE_SECONDS = 0.05


@dataclass(frozen=True)
class ReplicaStatus:
    """One measurement of the replica: reachable or not, and how far behind."""

    alias: str
    reachable: bool
    # Seconds behind the primary: 0 when it has replayed everything the primary wrote.
    lag_seconds: float | None = None
    behind_bytes: float | None = None
    error: str = ""

    def too_far_behind(self, max_lag: float) -> bool:
        """Unknown lag counts as too far: the board would rather read the primary."""
        return self.lag_seconds is None or self.lag_seconds > max_lag


def check_seconds() -> float:
    return conf.read_replica_check_seconds()


def max_lag_seconds() -> float:
    return conf.read_replica_max_lag_seconds()


def measure(replica_alias: str, primary_alias: str) -> ReplicaStatus:
    """Ask the primary for its WAL position and the replica how far its replay trails it.

    Never raises for a database error: an unreachable replica is a status, not a 500.
    """
    try:
        with connections[primary_alias].cursor() as cursor:
            cursor.execute(QUERIES["primary_position"])
            position = cursor.fetchone()[0]
        asked_at = time.monotonic()
    except DatabaseError as exc:
        # Without the primary's position the lag is unknown; the page's own reads will say why.
        return ReplicaStatus(replica_alias, reachable=True, error=f"primary position unknown: {_first_line(exc)}")
    try:
        in_recovery, behind, since_replay = _replica_row(replica_alias, position)
        caught_up_after = 0.0
        if in_recovery and behind is not None and behind > 0:
            # Usually a commit in flight: the age of the last replayed one would overstate the
            # lag of a quiet primary, so look once more before believing it.
            time.sleep(SETTLE_SECONDS)
            in_recovery, behind, since_replay = _replica_row(replica_alias, position)
            caught_up_after = time.monotonic() - asked_at
    except DatabaseError as exc:
        close_quietly(replica_alias)
        logger.warning("read replica %s unreachable: %s", replica_alias, exc, extra={"action": "board.replica_down"})
        return ReplicaStatus(replica_alias, reachable=False, error=_first_line(exc))
    if not in_recovery or behind is None or behind <= 0:
        # Caught up (within the settle wait, if it had to wait), or promoted: nothing is missing.
        return ReplicaStatus(replica_alias, reachable=True, lag_seconds=caught_up_after, behind_bytes=0.0)
    lag = None if since_replay is None else max(float(since_replay), 0.0)
    return ReplicaStatus(replica_alias, reachable=True, lag_seconds=lag, behind_bytes=float(behind))


def _replica_row(replica_alias: str, position: str) -> tuple[bool, float | None, float | None]:
    with connections[replica_alias].cursor() as cursor:
        cursor.execute(QUERIES["replica_lag"], [position])
        in_recovery, behind, since_replay = cursor.fetchone()
    return bool(in_recovery), behind, since_replay


def close_quietly(alias: str) -> None:
    """Drop a connection that failed, so the next request reconnects instead of reusing it."""
    with contextlib.suppress(DatabaseError):
        connections[alias].close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else exc.__class__.__name__


class _StatusCache:
    """The last measurement per replica alias, shared by the process's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[float, ReplicaStatus]] = {}

    def get(self, replica_alias: str, primary_alias: str) -> ReplicaStatus:
        now = time.monotonic()
        with self._lock:
            entry = self._entries.get(replica_alias)
        if entry is not None and entry[0] > now:
            return entry[1]
        status = measure(replica_alias, primary_alias)
        self.put(status)
        return status

    def put(self, status: ReplicaStatus) -> None:
        with self._lock:
            self._entries[status.alias] = (time.monotonic() + check_seconds(), status)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_cache = _StatusCache()


def replica_status(replica_alias: str, primary_alias: str) -> ReplicaStatus:
    """The replica's status, measured at most once per check window per process."""
    return _cache.get(replica_alias, primary_alias)


def mark_down(replica_alias: str, exc: BaseException) -> ReplicaStatus:
    """Record that a page's query just failed on the replica: the following requests of
    this check window read the primary without trying it again."""
    close_quietly(replica_alias)
    status = ReplicaStatus(replica_alias, reachable=False, error=_first_line(exc))
    _cache.put(status)
    return status


def forget() -> None:
    """Drop every cached measurement (tests; a settings change)."""
    _cache.clear()
