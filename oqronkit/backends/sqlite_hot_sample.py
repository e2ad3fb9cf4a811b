"""The SQLite hot plane's ``HotPlane.sample``: a bounded look at one queue (two index
reads; advisory, so they need not see the same moment)."""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager

from .hot_types import HotSample, Lease
from .sqlfiles import load_queries
from .sqlite_qlimits import SQLiteQueueLimits
from .types import Scope

_Q = load_queries("oqronkit.backends", "sql/sqlite/hot_queries.sql")


class SQLiteHotSample:
    """Mixed into :class:`~oqronkit.backends.sqlite_hot.SQLiteHotPlane`, which supplies
    the read connection."""

    def _guard(self, action: str) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def sample(self, scope: Scope, queue: str, *, limit: int) -> HotSample:
        if limit <= 0:
            return HotSample((), ())
        key = (scope.project, scope.environment, queue, limit)
        with self._guard("sample") as conn:
            ids = [job_id for (job_id,) in conn.execute(_Q["sample_entries"], key)]
            leases = tuple(Lease(*row) for row in conn.execute(_Q["sample_leases"], key))
        return HotSample(tuple(dict.fromkeys([*ids, *(lease.job_id for lease in leases)])), leases)


class SQLiteHotMixins(SQLiteQueueLimits, SQLiteHotSample):
    """Every mixin of :class:`~oqronkit.backends.sqlite_hot.SQLiteHotPlane` (the limited
    claim and start gate, the sample), one base for it."""
