"""The PostgreSQL durable store's claim with the claimed rows (``ClaimingStore.claim_and_read``),
for postgres mode, where the hot plane's tables live in the store's own database.

The hot plane's two claim statements (promote the due delayed jobs, then lease the
ready ones from the queue's floor with ``FOR UPDATE SKIP LOCKED``) go pipelined, the
second joined to the claimed jobs' rows (``statements.claim_read_statement``), so a
postgres-mode worker's start is one round trip after its wake-up instead of a claim and
then a read (issue 36, item 3). The hot plane's bookkeeping after a claim is kept: its
tokens sorted into claim order and the queue's floor raised (heads.py).
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from ..hot_types import Lease
from ..types import Scope, StoredRecord
from .heads import FloorRaiser
from .hot import QUERIES as HOT_QUERIES
from .pool import LazyPool
from .statements import QUERIES, claim_read_statement

#: Columns of a claimed row before its record's: the hot claim's (heads.py reads them).
_CLAIM_COLUMNS = 7


class PostgresClaimReads:
    """Mixed into :class:`~oqronkit.backends.postgres.store.PostgresDurableStore`, which
    supplies the pool and a floor raiser on it."""

    _pool: LazyPool
    _floors: FloorRaiser

    def claim_and_read(self, scope: Scope, queue: str, table: str, namespace: str, *, worker_id: str, limit: int,
                       lease_ms: int, now: int) -> tuple[list[Lease], list[StoredRecord]]:
        """Claim up to ``limit`` jobs of ``queue`` (as ``HotPlane.claim``) and read their
        rows of ``namespace`` in ``table`` in the same transaction and round trip; a job
        whose row is gone has a lease and no record (the caller acks it)."""
        if limit <= 0:
            return [], []
        keys = {"project": scope.project, "environment": scope.environment, "queue": queue, "now": now}
        params = {**keys, "limit": limit, "expires_at": now + lease_ms, "worker": worker_id, "namespace": namespace}
        query = claim_read_statement(table)

        def claim(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
            # One implicit transaction up to the pipeline's sync: promoted rows are seen
            # by the claim that follows, and the commit-mode setting covers both.
            own = conn.info.transaction_status == TransactionStatus.IDLE  # not an application's, lent
            with conn.pipeline():
                if own:  # on a lent connection the setting would outlive us into its transaction
                    conn.execute(QUERIES["claim_commit_async"])
                conn.execute(HOT_QUERIES["promote_due"], keys)
                cursor = conn.execute(query, params)
            return cursor.fetchall()

        # As the hot plane's claim: one more try on a new connection after a restart;
        # leases a lost first try took lapse to the rescuer under their own tokens.
        rows = self._pool.once_more_if_lost(claim)
        self._floors.after_claim(keys, rows)
        rows.sort(key=lambda r: r[1])  # tokens were drawn in claim order
        leases = [Lease(job_id, token, expires_at) for job_id, token, expires_at, *_ in rows]
        records = [StoredRecord(*row[_CLAIM_COLUMNS:]) for row in rows if row[_CLAIM_COLUMNS + 1] is not None]
        return leases, records
