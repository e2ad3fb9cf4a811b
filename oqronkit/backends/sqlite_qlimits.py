"""The SQLite hot plane's limited claim and start gate (``HotPlane.claim_limited``,
``HotPlane.start_limited``): one ``BEGIN IMMEDIATE`` write holds SQLite's write lock
across the count of live leases, the start log's read, the claim and the log's write
(the gate: the log's read and write), so claimers and starters in every process of the
machine see each other's entries."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

from .claim_limits import ClaimLimits, LimitedClaim, LimitedStart, LimitState, admit, held_in_last_hour, record, room
from .hot_types import Lease
from .sqlfiles import load_queries
from .types import Scope

_Q = load_queries("oqronkit.backends", "sql/sqlite/hot_queries.sql")


class SQLiteQueueLimits:
    """Mixed into :class:`~oqronkit.backends.sqlite_hot.SQLiteHotPlane`, which supplies
    the write transaction, the promotion of due jobs and the lease-taking step."""

    def _write(self, action: str) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _guard(self, action: str) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _promote(self, conn: sqlite3.Connection, key: tuple[str, str, str], now: int) -> None:
        raise NotImplementedError

    def _take(self, conn: sqlite3.Connection, key: tuple[str, str, str], limit: int, expires_at: int,
              worker_id: str) -> list[Lease]:
        raise NotImplementedError

    def claim_limited(
        self, scope: Scope, queue: str, *, worker_id: str, limit: int, lease_ms: int, now: int,
        limits: ClaimLimits,
    ) -> LimitedClaim:
        key = (scope.project, scope.environment, queue)
        with self._guard("claim_limited") as conn:  # idle pollers never take the write lock
            if limit <= 0 or not _scalar(conn.execute(_Q["any_claimable"], (*key, now))):
                return LimitedClaim([])
        with self._write("claim_limited") as conn:
            self._promote(conn, key, now)
            before = _scalar(conn.execute(_Q["qlimit_read"], key))
            state = LimitState.loads(before)
            live = int(_scalar(conn.execute(_Q["live_leases"], (*key, now))) or 0)
            allowed = room(state, limits, live=live, limit=limit, now=now)
            leases = self._take(conn, key, allowed, now + lease_ms, worker_id)
            held = allowed < limit and bool(_scalar(conn.execute(_Q["any_ready"], key)))
            retry_at = record(state, limits, tokens=[le.token for le in leases], held=held, now=now)
            if (after := state.dumps()) != before:
                conn.execute(_Q["qlimit_write"], (*key, after))
        return LimitedClaim(leases, held, retry_at if held else None)

    def start_limited(self, scope: Scope, queue: str, *, tokens: Sequence[int], now: int,
                      rate: tuple[int, int]) -> LimitedStart:
        key = (scope.project, scope.environment, queue)
        with self._write("start_limited") as conn:
            state = LimitState.loads(_scalar(conn.execute(_Q["qlimit_read"], key)))
            got = admit(state, rate, tokens=list(tokens), now=now)
            if got.at is not None:  # a refusal logs nothing: its pruning can wait for the next write
                conn.execute(_Q["qlimit_write"], (*key, state.dumps()))
        return got

    def limit_held(self, scope: Scope, queue: str, now: int) -> int:
        key = (scope.project, scope.environment, queue)
        with self._guard("limit_held") as conn:
            state = LimitState.loads(_scalar(conn.execute(_Q["qlimit_read"], key)))
        return held_in_last_hour(state.held, now)


def _scalar(cursor: Iterator[Any]) -> Any:
    # fetchall steps the statement to its end: no read snapshot is left open.
    rows = list(cursor)
    return rows[0][0] if rows else None
