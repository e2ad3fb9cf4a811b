"""The Postgres hot plane's ``HotPlane.sample``: a bounded look at one queue, off the
primary key (the ids) and the lease index in its order (the leases that lapse first), both
in one statement."""

from __future__ import annotations

from typing import Any

from ..hot_types import HotSample, Lease
from ..types import Scope
from .qlimits import PostgresQueueLimits


class PostgresHotSample:
    """Mixed into :class:`~oqronkit.backends.postgres.hot.PostgresHotPlane`, which
    supplies the named statements."""

    def _run(self, name: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def sample(self, scope: Scope, queue: str, *, limit: int) -> HotSample:
        if limit <= 0:
            return HotSample((), ())
        keys = {"project": scope.project, "environment": scope.environment, "queue": queue, "limit": limit}
        rows = self._run("sample", keys)
        ids = [job_id for job_id, token, _ in rows if token is None]
        # The statement reads the index in expiry order; ties are broken by id here.
        leased = sorted((row for row in rows if row[1] is not None), key=lambda r: (r[2], r[0]))
        leases = tuple(Lease(*row) for row in leased)
        return HotSample(tuple(dict.fromkeys([*ids, *(lease.job_id for lease in leases)])), leases)


class PostgresHotMixins(PostgresQueueLimits, PostgresHotSample):
    """The mixins of :class:`~oqronkit.backends.postgres.hot.PostgresHotPlane` that run
    named statements (the limited claim and start gate, the sample), one base for it."""
