"""The Redis durable store's claim with the claimed rows (``ClaimingStore.claim_and_read``):
one script, ``lua/claim_and_read.lua``, leases ready jobs on the hot plane of the same
server and returns their rows, so a redis-mode worker's start is one round trip after its
wake-up instead of a claim and then a read (issue 36, item 3)."""

from __future__ import annotations

import json

from redis.retry import Retry

from ...errors import BackendUnavailable
from ..hot_types import Lease
from ..types import Scope, StoredRecord
from .connection import call
from .keys import queue_keys
from .rows import decode_row
from .scripts import PROMOTE_BATCH, Scripts


class RedisClaimReads:
    """Mixed into :class:`~oqronkit.backends.redis.store.RedisDurableStore`, which
    supplies the scripts, the key names and the retry policy of a call that must not
    run twice."""

    _scripts: Scripts
    _where: str
    _closed: bool
    _not_run: Retry

    def _keys(self, scope: Scope, table: str, namespace: str) -> list[str]:
        raise NotImplementedError

    def claim_and_read(self, scope: Scope, queue: str, table: str, namespace: str, *, worker_id: str, limit: int,
                       lease_ms: int, now: int) -> tuple[list[Lease], list[StoredRecord]]:
        """Claim up to ``limit`` jobs of ``queue`` (as ``HotPlane.claim``) and read their
        rows of ``namespace`` in the same atomic step; a job whose row is gone has a lease
        and no record (the caller acks it)."""
        if limit <= 0:
            return [], []
        k = queue_keys(scope, queue)
        expires_at = now + lease_ms
        keys = [k.ready, k.delayed, k.meta, k.leases, k.expiry, k.seq, k.token, self._keys(scope, table, namespace)[0]]
        script = self._scripts["claim_and_read"]
        if self._closed:
            raise BackendUnavailable(f"The Redis durable store for {self._where} is closed.")
        # Retried only when the script did not run: a lost reply must not claim twice
        # (the worker asks leases_of what it holds, as after a plain claim).
        claimed, *rows = call(self._where, "claim_and_read",
                              lambda: script(keys=keys, args=[now, limit, expires_at, worker_id, PROMOTE_BATCH]),
                              self._not_run)
        found = json.loads(claimed)
        if not found:
            return [], []
        first, ids = int(found[0]), found[1:]
        leases = [Lease(job_id, first + i, expires_at) for i, job_id in enumerate(ids)]
        return leases, [decode_row(namespace, id, raw) for id, raw in zip(ids, rows, strict=True) if raw is not None]
