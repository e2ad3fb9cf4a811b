"""Leader election on the hot plane and the loop that runs the leader's services."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..clock import now_ms
from ..errors import BackendUnavailable, OqronError
from ..history.rollup import Retention, rollup
from ..namespaces import QUEUE
from ..operations.runner import OperationRunner
from ..scheduler import Scheduler
from .hot_reset import ResetWatch
from .kept_depths import KEEP_EVERY_S, keep_depths
from .passes import ServicePass, record_pass
from .reconciler import Reconciler
from .rescuer import _lease_ms, rescue_expired
from .retention import prune
from .upkeep import horizon_upkeep, table_upkeep

if TYPE_CHECKING:
    from ..engine import Engine

logger = logging.getLogger(__name__)
LEADER_LOCK = "leader"
#: Least time after an outage before lapsed leases count stalls (see Services.settled_queues):
#: a live holder reconnects (about 1 s) and its heartbeat renews (every lease/3, at most 10 s).
OUTAGE_GRACE_FLOOR_MS = 3_000
#: How long a resigning leader waits for its rollup, operations and upkeep threads.
SIDE_THREADS_WAIT_S = 5.0


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
        horizon_every: float = 1.0,
        scheduler_every: float = 0.2,
        operations_every: float = 1.0,
        rollup_every: float = 60.0,
        depths_every: float = KEEP_EVERY_S,
    ) -> None:
        self.engine = engine
        self.worker_id = worker_id
        self.lease_ms = lease_ms
        # The scheduler comes first: its slots are time-critical, the other services are not.
        self.intervals = {"scheduler": scheduler_every, "scheduler-recovery": 1.0, "rescue": rescue_every,
                          "reconcile": reconcile_every, "sweep": sweep_every, "retention": retention_every,
                          "upkeep": upkeep_every, "horizon": horizon_every, "operations": operations_every,
                          "rollup": rollup_every, "depths": depths_every}
        self.is_leader = False
        self.reconciler = Reconciler(engine)
        self.scheduler = Scheduler(engine, worker_id=worker_id)
        self._last: dict[str, float] = {}
        self._upkeep: threading.Thread | None = None
        self._horizon: threading.Thread | None = None
        self.operations = OperationRunner(engine, owner=worker_id)
        self._operations: threading.Thread | None = None
        self._rollup: threading.Thread | None = None
        self._depths: threading.Thread | None = None
        self.on_rescued: Callable[[int], None] | None = None  # the worker's metrics count the rescues
        # Monotonic time an outage this process saw last ended (None: none since it started):
        # its last failed call, then the first call answered after it.
        self.outage_at: float | None = None
        self._down = False
        self.resets = ResetWatch(engine)

    def loop(self, stop: threading.Event) -> None:
        while not stop.wait(0.05 if self.resets.pending else 0.25):
            self.step()

    def step(self) -> None:
        """One tick of the loop; an error is logged (an outage remembered) and the loop goes on."""
        try:
            self.tick()
        except OqronError as exc:
            self.note_outage(exc)
            logger.warning("leader services: %s", exc, extra={"action": "services.error"})

    def note_outage(self, exc: BaseException) -> None:
        if isinstance(exc, BackendUnavailable):
            self.outage_at, self._down = time.monotonic(), True

    def answered(self) -> None:
        """A plane answered: an outage's grace starts now, not at its last failure (a call
        waits up to BACKEND_WAIT, so that could be 5 s before the plane was back)."""
        if self._down:
            self.outage_at, self._down = time.monotonic(), False

    def settled_queues(self, queues: list[str]) -> list[str]:
        """The queues whose lapsed leases may count stalls now: all of them, but for a
        lease period (at least OUTAGE_GRACE_FLOOR_MS) after an outage. Leases lapsed while
        a plane was away; their live holders' heartbeats renew them once it is back, and
        a rescue before that counted a stall against a live job (or reran a completed one)."""
        if self.outage_at is None:
            return queues
        since_ms = (time.monotonic() - self.outage_at) * 1000
        return [q for q in queues if since_ms >= max(_lease_ms(self.engine, q), OUTAGE_GRACE_FLOOR_MS)]

    def tick(self) -> None:
        """Renew or seek leadership, then run whatever service is due."""
        leader = self.engine.hot.acquire_lock(LEADER_LOCK, self.worker_id, ttl_ms=self.lease_ms, now=now_ms())
        self.answered()
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
        now = time.monotonic()
        if self.resets.noticed():  # a crash emptied the hot tables: the reconciler's first pass now
            self._last["reconcile"] = 0.0
        if not leader:
            return
        for name, every in self.intervals.items():
            due = now - self._last.get(name, 0.0) >= every
            if due or (name == "reconcile" and self.resets.second_pass_due()):
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
        if name == "horizon":
            self.start_horizon_upkeep()
            return
        if name == "operations":
            self.start_operations()
            return
        if name == "rollup":
            self._rollup = self._start_once(self._rollup, self._run_rollup, "oqron-rollup")
            return
        if name == "depths":  # a count of every hot row (postgres): never in the scheduler's way
            self._depths = self._start_once(self._depths, self._run_kept_depths, "oqron-depths")
            return
        try:
            self._run_service(name)
        except OqronError as exc:  # caught per service: a failing rescuer must not stop the reconciler
            self.note_outage(exc)
            logger.warning("%s: %s", name, exc, extra={"action": "services.error"})
        except Exception:  # a bug in one service must never stop this loop renewing the lease
            logger.exception("%s failed", name, extra={"action": "services.failed"})

    def _run_service(self, name: str) -> None:
        queues = self.known_queues()
        self.answered()  # the durable plane too
        if name in ("rescue", "reconcile"):
            if name == "reconcile":
                self.resets.remember_workers()
            self._run_recorded(name, queues)
        elif name == "sweep":
            from ..queues.dependencies import sweep_waiting

            sweep_waiting(self.engine.durable, self.engine.hot, queues)
            from ..groups.ledger import sweep_groups

            sweep_groups(self.engine.durable, self.engine.hot)
        elif name == "retention":
            prune(self.engine)

    def _run_recorded(self, name: str, queues: list[str]) -> None:
        """The rescuer or the reconciler, its pass recorded (services/passes.py)."""
        report = ServicePass(name, started_at=now_ms(), by=self.worker_id)
        try:
            if name == "rescue":
                rescued = rescue_expired(self.engine, self.settled_queues(queues), report)
                if self.on_rescued is not None:
                    self.on_rescued(rescued)
            else:
                self.reconciler.run(queues, stall_queues=set(self.settled_queues(queues)), report=report)
        except BackendUnavailable:
            raise  # no record: writing one would wait out the same outage (logged by the caller)
        except Exception as exc:
            report.error = f"{type(exc).__name__}: {exc}"[:500]
            record_pass(self.engine, report)
            raise
        record_pass(self.engine, report)

    def start_upkeep(self) -> None:
        """Table upkeep on a thread of its own: a VACUUM of a large table must not hold up
        the scheduler and the rescuer. One at a time; off with OQRON table_upkeep=False."""
        if not self.engine.config.table_upkeep or (self._upkeep is not None and self._upkeep.is_alive()):
            return
        self._upkeep = threading.Thread(target=table_upkeep, args=(self.engine,), name="oqron-upkeep", daemon=True)
        self._upkeep.start()

    def start_horizon_upkeep(self) -> None:
        """The horizon's check (a VACUUM once a long transaction ended) on its own thread, one at a time."""
        if not self.engine.config.table_upkeep or (self._horizon is not None and self._horizon.is_alive()):
            return
        self._horizon = threading.Thread(target=horizon_upkeep, args=(self.engine,), name="oqron-horizon",
                                         daemon=True)
        self._horizon.start()

    def start_operations(self) -> None:
        """Tracked bulk operations on a thread of their own (a 200,000-item retry must not
        hold up the scheduler), one at a time, chunk by chunk while this node leads."""
        if self._operations is not None and self._operations.is_alive():
            return
        self._operations = threading.Thread(target=self._drain_operations, name="oqron-operations", daemon=True)
        self._operations.start()

    def _drain_operations(self) -> None:
        try:
            self.operations.drain(keep_going=lambda: self.is_leader)
        except OqronError as exc:  # the next interval tries again
            self.note_outage(exc)
            logger.warning("operations: %s", exc, extra={"action": "services.error"})
        except Exception:
            logger.exception("operations failed", extra={"action": "services.failed"})

    @staticmethod
    def _start_once(running: threading.Thread | None, target: Callable[[], None], name: str) -> threading.Thread:
        """``target`` on a thread of its own unless the last one still runs (returned then)."""
        if running is not None and running.is_alive():
            return running
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        return thread

    def _run_rollup(self) -> None:
        """The metrics history's rollup (oqronkit.history.rollup): idempotent, so a pass
        cut short by a crash or a leader change is simply run again."""
        try:
            rollup(self.engine.durable, retention=Retention.from_config(self.engine.config))
        except OqronError as exc:  # the next interval tries again
            self.note_outage(exc)
            logger.warning("rollup: %s", exc, extra={"action": "services.error"})
        except Exception:
            logger.exception("rollup failed", extra={"action": "services.failed"})

    def _run_kept_depths(self) -> None:
        """Count the queue depths a board asked for lately (kept_depths.py); nothing when none did."""
        try:
            keep_depths(self.engine.hot)
        except OqronError as exc:  # readers count for themselves meanwhile
            self.note_outage(exc)
            logger.info("kept depths: %s", exc, extra={"action": "services.error"})
        except Exception:
            logger.exception("kept depths failed", extra={"action": "services.failed"})

    def known_queues(self) -> list[str]:
        return known_queues(self.engine)

    def resign(self) -> None:
        """Stop leading: release the lock, then wait (at most SIDE_THREADS_WAIT_S in all) for
        the side threads, so none is still inside a store the engine closes next."""
        self.scheduler.shutdown()
        if self.is_leader:
            try:
                self.engine.hot.release_lock(LEADER_LOCK, self.worker_id)
            except OqronError:
                pass
            self.is_leader = False
        deadline = time.monotonic() + SIDE_THREADS_WAIT_S
        for thread in (self._rollup, self._depths, self._operations, self._upkeep, self._horizon):
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout=max(0.0, deadline - time.monotonic()))


def known_queues(engine: Engine) -> list[str]:
    """Queues declared here plus every queue any worker recorded as control state."""
    return sorted(set(engine.registry.queues) | set(recorded_queues(engine)))


def recorded_queues(engine: Engine) -> dict[str, Any]:
    """The queue records workers wrote (control state: lease, limits), by queue name."""
    return {r.id: r.value for r in engine.durable.list(QUEUE, limit=1000).records}
