"""The Postgres hot plane's limited claim and start gate (``HotPlane.claim_limited``,
``HotPlane.start_limited``): one transaction that first locks the queue's
``oqron_hot_qlimits`` row, then (a claim) counts live leases, claims what the limits
leave and writes the start log back, or (a start) moves the starting leases' entries.
The row lock orders limited claims and starts of one queue across every process and
machine; unlimited claims never take it.

Each transaction is one pipeline whose BEGIN and COMMIT are plain statements (as the
durable store's ``_pipelined``): a claim takes three round trips (lock and count; claim;
write and commit) rather than five with psycopg's ``transaction()`` around them, a
start two (lock; write and commit)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar

import psycopg
from psycopg.pq import TransactionStatus

from ..claim_limits import ClaimLimits, LimitedClaim, LimitedStart, LimitState, admit, held_in_last_hour, record, room
from ..hot_types import Lease
from ..sqlfiles import load_queries
from ..types import Scope
from .heads import FloorRaiser

QUERIES = load_queries("oqronkit.backends.postgres", "sql/hot_queries.sql")
_TRANSACTION = load_queries("oqronkit.backends.postgres", "sql/queries.sql")
T = TypeVar("T")


class PostgresQueueLimits:
    """Mixed into :class:`~oqronkit.backends.postgres.hot.PostgresHotPlane`, which
    supplies the pooled connection and the queues' floors (heads.py)."""

    _floors: FloorRaiser

    def _connection(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        raise NotImplementedError

    def claim_limited(
        self, scope: Scope, queue: str, *, worker_id: str, limit: int, lease_ms: int, now: int,
        limits: ClaimLimits,
    ) -> LimitedClaim:
        keys = {"project": scope.project, "environment": scope.environment, "queue": queue, "now": now}
        rows, held, retry_at = self._pipelined(lambda conn: _claim(conn, keys, worker_id, limit, lease_ms, limits))
        self._floors.after_claim(keys, rows)
        rows.sort(key=lambda r: r[1])  # tokens were drawn in claim order
        leases = [Lease(job_id, token, expires_at) for job_id, token, expires_at, *_ in rows]
        return LimitedClaim(leases, held, retry_at if held else None)

    def start_limited(self, scope: Scope, queue: str, *, tokens: Sequence[int], now: int,
                      rate: tuple[int, int]) -> LimitedStart:
        keys = {"project": scope.project, "environment": scope.environment, "queue": queue}
        return self._pipelined(lambda conn: _start(conn, keys, list(tokens), now, rate))

    def limit_held(self, scope: Scope, queue: str, now: int) -> int:
        keys = {"project": scope.project, "environment": scope.environment, "queue": queue}
        with self._connection() as conn:
            state = LimitState.loads(_first(conn.execute(QUERIES["qlimit_read"], keys)))
        return held_in_last_hour(state.held, now)

    def _pipelined(self, transaction: Callable[[psycopg.Connection[Any]], T]) -> T:
        with self._connection() as conn:
            try:
                with conn.pipeline():
                    return transaction(conn)
            except BaseException:
                # A failed statement makes the server skip the rest, COMMIT included.
                if not conn.closed and conn.info.transaction_status != TransactionStatus.IDLE:
                    conn.rollback()
                raise


def _claim(conn: psycopg.Connection[Any], keys: dict[str, Any], worker_id: str, limit: int, lease_ms: int,
           limits: ClaimLimits) -> tuple[list[tuple[Any, ...]], bool, int | None]:
    """The transaction's statements, inside the caller's pipeline: each fetch is a round trip."""
    now = keys["now"]
    conn.execute(_TRANSACTION["begin"])
    conn.execute(QUERIES["qlimit_ensure"], keys)
    locked = conn.execute(QUERIES["qlimit_lock"], keys)
    conn.execute(QUERIES["promote_due"], keys)
    counted = conn.execute(QUERIES["live_leases"], keys)
    before = _first(locked)
    state = LimitState.loads(before)
    allowed = room(state, limits, live=int(_first(counted)), limit=limit, now=now)
    claimed = None
    if allowed > 0:
        lease = {"limit": allowed, "expires_at": now + lease_ms, "worker": worker_id}
        claimed = conn.execute(QUERIES["claim"], {**keys, **lease})
    left = conn.execute(QUERIES["queue_has_ready"], keys)
    rows = claimed.fetchall() if claimed is not None else []
    held = allowed < limit and bool(_first(left))
    retry_at = record(state, limits, tokens=[row[1] for row in rows], held=held, now=now)
    if (after := state.dumps()) != before:  # an empty poll writes nothing
        conn.execute(QUERIES["qlimit_write"], {**keys, "state": after})
    conn.execute(_TRANSACTION["commit"])
    return rows, held, retry_at


def _start(conn: psycopg.Connection[Any], keys: dict[str, Any], tokens: list[int], now: int,
           rate: tuple[int, int]) -> LimitedStart:
    """The start gate's statements, inside the caller's pipeline."""
    conn.execute(_TRANSACTION["begin"])
    conn.execute(QUERIES["qlimit_ensure"], keys)  # its claim made the row, unless a crash emptied the table
    state = LimitState.loads(_first(conn.execute(QUERIES["qlimit_lock"], keys)))
    got = admit(state, rate, tokens=tokens, now=now)
    if got.at is not None:
        conn.execute(QUERIES["qlimit_write"], {**keys, "state": state.dumps()})
    conn.execute(_TRANSACTION["commit"])
    return got


def _first(cursor: psycopg.Cursor[Any]) -> Any:
    found = cursor.fetchone()
    return None if found is None else found[0]
