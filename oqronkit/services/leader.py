"""Leader election on the hot plane and the loop that runs the leader's services."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from ..clock import now_ms
from ..errors import OqronError
from ..namespaces import QUEUE
from ..scheduler import Scheduler
from .reconciler import Reconciler
from .rescuer import rescue_expired
from .retention import prune
from .upkeep import table_upkeep

if TYPE_CHECKING:
    from ..engine import Engine

logger = logging.getLogger(__name__)
LEADER_LOCK = "leader"


class Services:
    """Elects a leader among every worker process of one (project, environment) and,
    while leading, runs each service on its interval."""

    def __init__(
        self,
        engine: Engine,
        *,
        worker_id: str,
        lease_ms: int = 10_000,
        rescue_every: float = 1.0,
        reconcile_every: float = 5.0,
        sweep_every: float = 5.0,
        retention_every: float = 60.0,
        upkeep_every: float = 60.0,
        scheduler_every: float = 0.2,
    ) -> None:
        self.engine = engine
        self.worker_id = worker_id
        self.lease_ms = lease_ms
        # The scheduler comes first: its slots are time-critical, the other services are not.
        self.intervals = {"scheduler": scheduler_every, "scheduler-recovery": 1.0, "rescue": rescue_every,
                          "reconcile": reconcile_every, "sweep": sweep_every, "retention": retention_every,
                          "upkeep": upkeep_every}
        self.is_leader = False
        self.reconciler = Reconciler(engine)
        self.scheduler = Scheduler(engine, worker_id=worker_id)
        self._last: dict[str, float] = {}
        self._upkeep: threading.Thread | None = None

    def loop(self, stop: threading.Event) -> None:
        while not stop.wait(0.25):
            try:
                self.tick()
            except OqronError as exc:
                logger.warning("leader services: %s", exc, extra={"action": "services.error"})

    def tick(self) -> None:
        """Renew or seek leadership, then run whatever service is due."""
        leader = self.engine.hot.acquire_lock(LEADER_LOCK, self.worker_id, ttl_ms=self.lease_ms, now=now_ms())
        if leader != self.is_leader:
            logger.info("worker %s %s the leader", self.worker_id, "is now" if leader else "is no longer",
                        extra={"action": "services.leader" if leader else "services.follower"})
            self.is_leader = leader
            self.scheduler.set_leader(leader)
        try:
            self.scheduler.prepare()  # every node stores its declared crons/schedules once (version rules)
        except OqronError as exc:
            logger.warning("could not store cron/schedule definitions yet: %s", exc,
                           extra={"action": "services.scheduler_prepare"})
        if not leader:
            return
        now = time.monotonic()
        for name, every in self.intervals.items():
            if now - self._last.get(name, 0.0) >= every:
                self._last[name] = now
                self.run(name)

    def run(self, name: str) -> None:
        if name.startswith("scheduler"):
            try:
                if name == "scheduler":
                    self.scheduler.tick()
                else:
                    self.scheduler.recover()
            except OqronError as exc:  # caught here so the services after it still run
                logger.warning("%s: %s", name, exc, extra={"action": "services.error"})
            except Exception:  # a scheduler bug must never stop this loop renewing the lease
                logger.exception("%s failed", name, extra={"action": "services.scheduler_failed"})
            return
        if name == "upkeep":
            self.start_upkeep()
            return
        try:
            self._run_service(name)
        except OqronError as exc:  # caught per service: a failing rescuer must not stop the reconciler
            logger.warning("%s: %s", name, exc, extra={"action": "services.error"})
        except Exception:  # a bug in one service must never stop this loop renewing the lease
            logger.exception("%s failed", name, extra={"action": "services.failed"})

    def _run_service(self, name: str) -> None:
        queues = self.known_queues()
        if name == "rescue":
            rescue_expired(self.engine, queues)
        elif name == "reconcile":
            self.reconciler.run(queues)
        elif name == "sweep":
            from ..dependencies import sweep_waiting

            sweep_waiting(self.engine.durable, self.engine.hot, queues)
        elif name == "retention":
            prune(self.engine)

    def start_upkeep(self) -> None:
        """Table upkeep on a thread of its own: a VACUUM of a large table must not hold up
        the scheduler and the rescuer. One at a time; off with OQRON table_upkeep=False."""
        if not self.engine.config.table_upkeep or (self._upkeep is not None and self._upkeep.is_alive()):
            return
        self._upkeep = threading.Thread(target=table_upkeep, args=(self.engine,), name="oqron-upkeep", daemon=True)
        self._upkeep.start()

    def known_queues(self) -> list[str]:
        """Queues declared here plus every queue any worker recorded as control state."""
        names = set(self.engine.registry.queues)
        names |= {r.id for r in self.engine.durable.list(QUEUE, limit=1000).records}
        return sorted(names)

    def resign(self) -> None:
        self.scheduler.shutdown()
        if self.is_leader:
            try:
                self.engine.hot.release_lock(LEADER_LOCK, self.worker_id)
            except OqronError:
                pass
            self.is_leader = False
