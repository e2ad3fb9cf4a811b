"""The Postgres hot plane's limited claim (``HotPlane.claim_limited``): one transaction
that first locks the queue's ``oqron_hot_qlimits`` row, then counts live leases, claims
what the limits leave and writes the start log back. The row lock orders limited claims
of one queue across every process and machine; unlimited claims never take it.

The transaction is one pipeline whose BEGIN and COMMIT are plain statements (as the
durable store's ``_pipelined``): three round trips (lock and count; claim; write and
commit) rather than five with psycopg's ``transaction()`` around them."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from ..claim_limits import ClaimLimits, LimitedClaim, LimitState, held_in_last_hour, record, room
from ..hot_types import Lease
from ..sqlfiles import load_queries
from ..types import Scope

QUERIES = load_queries("oqronkit.backends.postgres", "sql/hot_queries.sql")
_TRANSACTION = load_queries("oqronkit.backends.postgres", "sql/queries.sql")


class PostgresQueueLimits:
    """Mixed into :class:`~oqronkit.backends.postgres.hot.PostgresHotPlane`, which
    supplies the pooled connection."""

    def _connection(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        raise NotImplementedError

    def claim_limited(
        self, scope: Scope, queue: str, *, worker_id: str, limit: int, lease_ms: int, now: int,
        limits: ClaimLimits,
    ) -> LimitedClaim:
        keys = {"project": scope.project, "environment": scope.environment, "queue": queue, "now": now}
        with self._connection() as conn:
            try:
                with conn.pipeline():
                    rows, held, retry_at = _claim(conn, keys, worker_id, limit, lease_ms, limits)
            except BaseException:
                # A failed statement makes the server skip the rest, COMMIT included.
                if not conn.closed and conn.info.transaction_status != TransactionStatus.IDLE:
                    conn.rollback()
                raise
        rows.sort(key=lambda r: r[1])  # tokens were drawn in claim order
        leases = [Lease(job_id, token, expires_at) for job_id, token, expires_at in rows]
        return LimitedClaim(leases, held, retry_at if held else None)

    def limit_held(self, scope: Scope, queue: str, now: int) -> int:
        keys = {"project": scope.project, "environment": scope.environment, "queue": queue}
        with self._connection() as conn:
            state = LimitState.loads(_first(conn.execute(QUERIES["qlimit_read"], keys)))
        return held_in_last_hour(state.held, now)


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
    retry_at = record(state, limits, claimed=len(rows), held=held, now=now)
    if (after := state.dumps()) != before:  # an empty poll writes nothing
        conn.execute(QUERIES["qlimit_write"], {**keys, "state": after})
    conn.execute(_TRANSACTION["commit"])
    return rows, held, retry_at


def _first(cursor: psycopg.Cursor[Any]) -> Any:
    found = cursor.fetchone()
    return None if found is None else found[0]
