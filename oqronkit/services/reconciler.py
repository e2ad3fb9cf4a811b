"""The reconciler: the durable plane is the truth, the hot plane a cache of it.

Every durable waiting or delayed job missing from the hot plane on two passes in a row
(a Redis restart, an ``add`` while the hot plane was down) is signalled again. One pass
cannot tell a lost job from one caught between the durable list and the hot plane's
``present`` check: added (stored, not yet signalled), or claimed and completed (in
hot plane backends that settle out of order). Re-signalling those could run a job
twice; by the next pass they are signalled or gone. Likewise an active job missing from the
hot plane on two passes in a row (its worker would have re-created the lease with its
heartbeat in between) is treated as stalled.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..backends.hot_types import Signal
from ..clock import now_ms
from ..jobs import Job
from .rescuer import mark_stalled

if TYPE_CHECKING:
    from ..engine import Engine

logger = logging.getLogger(__name__)
PAGE = 1000


class Reconciler:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        # (queue, job id) missing from the hot plane on the last pass: active jobs with
        # their lease token, waiting and delayed jobs in _missing.
        self._suspects: dict[tuple[str, str], int | None] = {}
        self._missing: set[tuple[str, str]] = set()

    def run(self, queues: list[str]) -> int:
        """One pass over every queue; returns how many jobs were signalled again."""
        signalled = 0
        suspects: dict[tuple[str, str], int | None] = {}
        missing: set[tuple[str, str]] = set()
        for queue in queues:
            signalled += self._pending(queue, "waiting", missing) + self._pending(queue, "delayed", missing)
            suspects |= self._active(queue)
        self._suspects, self._missing = suspects, missing
        if signalled:
            logger.warning("reconciler signalled %d durable job(s) the hot plane had lost", signalled,
                           extra={"action": "reconciler.signalled"})
        return signalled

    def _pending(self, queue: str, status: str, missing: set[tuple[str, str]]) -> int:
        """Signal the ``status`` jobs of ``queue`` missing from the hot plane on this pass
        and the last; add those missing for the first time to ``missing``."""
        durable, hot = self.engine.durable, self.engine.hot
        signalled, cursor = 0, None
        while True:
            page = durable.list(f"queue_job:{queue}", status=status, limit=PAGE, cursor=cursor)
            jobs = [Job.from_value(r.value) for r in page.records]
            present = hot.present(queue, [j.id for j in jobs])
            lost = []
            for job in jobs:
                if job.id in present:
                    continue
                if (queue, job.id) in self._missing:
                    lost.append(job)
                else:
                    missing.add((queue, job.id))
            hot.signal(queue, [Signal(j.id, j.priority, j.run_at, j.lifo) for j in lost], now_ms())
            signalled += len(lost)
            if page.next_cursor is None:
                return signalled
            cursor = page.next_cursor

    def _active(self, queue: str) -> dict[tuple[str, str], int | None]:
        durable, hot = self.engine.durable, self.engine.hot
        suspects: dict[tuple[str, str], int | None] = {}
        cursor = None
        while True:
            page = durable.list(f"queue_job:{queue}", status="active", limit=PAGE, cursor=cursor)
            jobs = [Job.from_value(r.value) for r in page.records]
            present = hot.present(queue, [j.id for j in jobs])
            for job in jobs:
                if job.id in present:
                    continue
                key = (queue, job.id)
                if key in self._suspects and self._suspects[key] == job.lease_token:
                    mark_stalled(self.engine, job, job.lease_token, "lease missing from the hot plane")
                else:
                    suspects[key] = job.lease_token
            if page.next_cursor is None:
                return suspects
            cursor = page.next_cursor
