"""The Postgres hot plane's limited claim (``HotPlane.claim_limited``): one transaction
(three round trips) that first locks the queue's ``oqron_hot_qlimits`` row, then counts
live leases, claims what the limits leave and writes the start log back. The row lock orders limited claims
of one queue across every process and machine; unlimited claims never take it."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import psycopg

from ..claim_limits import ClaimLimits, LimitedClaim, LimitState, held_in_last_hour, record, room
from ..hot_types import Lease
from ..sqlfiles import load_queries
from ..types import Scope

QUERIES = load_queries("oqronkit.backends.postgres", "sql/hot_queries.sql")


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
        with self._connection() as conn, conn.transaction():
            with conn.pipeline():  # one round trip: lock, promote, count
                conn.execute(QUERIES["qlimit_ensure"], keys)
                locked = conn.execute(QUERIES["qlimit_lock"], keys)
                conn.execute(QUERIES["promote_due"], keys)
                counted = conn.execute(QUERIES["live_leases"], keys)
            before = _first(locked)
            state = LimitState.loads(before)
            allowed = room(state, limits, live=int(_first(counted)), limit=limit, now=now)
            rows: list[tuple[Any, ...]] = []
            with conn.pipeline():  # one round trip: claim, look for what is left
                if allowed > 0:
                    lease = {"limit": allowed, "expires_at": now + lease_ms, "worker": worker_id}
                    claimed = conn.execute(QUERIES["claim"], {**keys, **lease})
                left = conn.execute(QUERIES["queue_has_ready"], keys)
            if allowed > 0:
                rows = claimed.fetchall()
            held = allowed < limit and bool(_first(left))
            retry_at = record(state, limits, claimed=len(rows), held=held, now=now)
            after = state.dumps()
            if after != before:  # an empty poll writes nothing
                conn.execute(QUERIES["qlimit_write"], {**keys, "state": after})
        rows.sort(key=lambda r: r[1])  # tokens were drawn in claim order
        leases = [Lease(job_id, token, expires_at) for job_id, token, expires_at in rows]
        return LimitedClaim(leases, held, retry_at if held else None)

    def limit_held(self, scope: Scope, queue: str, now: int) -> int:
        keys = {"project": scope.project, "environment": scope.environment, "queue": queue}
        with self._connection() as conn:
            state = LimitState.loads(_first(conn.execute(QUERIES["qlimit_read"], keys)))
        return held_in_last_hour(state.held, now)


def _first(cursor: psycopg.Cursor[Any]) -> Any:
    found = cursor.fetchone()
    return None if found is None else found[0]
