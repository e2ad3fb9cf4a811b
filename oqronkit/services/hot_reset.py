"""After a crash emptied the hot plane (postgres mode's UNLOGGED tables): waiting jobs
signalled again as soon as every live worker has re-created its leases.

The reconciler signals a durable waiting job again once it was missing from the hot
plane on two passes in a row; between them, a live worker re-creates the leases of the
jobs it holds (claimed jobs stay "waiting" in the durable plane until their active state
is written behind). After a reset the leader runs the first pass at once and the second
as soon as every worker it saw alive has said it re-created its leases for the new
epoch (its heartbeat does on noticing the reset), or after :data:`WAIT_MAX_S` at most:
so a waiting job runs again within about a second of the server's return, and a held
one is never signalled twice.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..clock import now_ms
from ..live import live_workers

if TYPE_CHECKING:
    from ..engine import Engine
    from ..hot import HotPlaneFacade

ACKS_GROUP = "hot-epoch-acks"
ACK_TTL_MS = 60_000
#: Longest the second pass waits for the workers' acknowledgements (the reconciler's interval).
WAIT_MAX_S = 5.0


def acknowledge(hot: HotPlaneFacade, worker_id: str) -> None:
    """Say this worker's leases are re-created for the plane's current epoch."""
    epoch = hot.epoch
    if epoch is not None:
        hot.kv_set(ACKS_GROUP, {worker_id: epoch}, ttl_ms=ACK_TTL_MS, now=now_ms())


class ResetWatch:
    """The leader's side: notices resets and says when the second pass may run."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._resets = engine.hot.resets
        self._since: float | None = None
        self.workers: set[str] = set()

    @property
    def pending(self) -> bool:
        return self._since is not None

    def remember_workers(self) -> None:
        """The live workers, read while no reset is pending (their registry goes with a reset)."""
        if self._since is None:
            self.workers = {str(w.get("id")) for w in live_workers(self.engine.hot)}

    def noticed(self) -> bool:
        """Whether this process found the plane emptied since the last call."""
        resets = self.engine.hot.resets
        if resets == self._resets:
            return False
        self._resets, self._since = resets, time.monotonic()
        return True

    def second_pass_due(self) -> bool:
        """True once, when every remembered worker acknowledged the epoch (or the wait is over)."""
        if self._since is None:
            return False
        hot = self.engine.hot
        if time.monotonic() - self._since < WAIT_MAX_S:
            acks = hot.kv_get(ACKS_GROUP, sorted(self.workers), now_ms()) if self.workers else {}
            if any(acks.get(worker) != hot.epoch for worker in self.workers):
                return False
        self._since = None
        return True
