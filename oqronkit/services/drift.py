"""Plane drift: where the hot plane disagrees with the durable plane, per queue.

For each queue, a bounded sample of both planes (at most :data:`SAMPLE` rows of each
structure, read off the primary keys and the lease-expiry index: the cost does not grow
with the queue) names:

* durable jobs waiting or delayed that the hot plane does not hold (not signalled:
  the reconciler's work), older than :data:`GRACE_MS` (a job just stored is signalled
  a moment later);
* hot entries with no durable job (a claim would find nothing to run);
* durable active jobs without a lease on the hot plane (a live worker's heartbeat
  re-creates it; otherwise the reconciler counts a stall);
* leases that lapsed (the rescuer's work) or lapse within one heartbeat interval
  (a live holder renews every third of a lease);
* active jobs whose worker is not in the live worker registry (gone, or its heartbeat late).

Together with the reconciler's and rescuer's last passes (services/passes.py). Every
finding is re-checked once before it is reported, so a job moving on between two reads
is not reported as drift.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..backends.hot_types import QueueDepths
from ..clock import now_ms
from ..live import live_workers
from ..namespaces import QUEUE, job_namespace
from .kept_depths import read_depths
from .leader import LEADER_LOCK, recorded_queues
from .passes import ServicePass, kept_passes, last_passes

if TYPE_CHECKING:
    from ..engine import Engine

#: A queue the hot plane holds nothing of.
NO_DEPTHS = QueueDepths(0, 0, 0)
#: Rows of each structure sampled per queue (durable jobs, hot ids per state, leases).
SAMPLE = 200
#: Queues compared in one report at most.
MAX_QUEUES = 100
#: A job stored or moved this recently may not be signalled yet: not drift.
GRACE_MS = 2_000
#: Ids named per finding (the counts cover the whole sample).
NAMED = 10
PENDING = ("waiting", "delayed")
#: The fields of a stored job the comparison reads (never its whole value).
COMPARED = ("status", "updatedAt", "workerId")
DEFAULT_LEASE_MS = 30_000


@dataclass
class Finding:
    """How many of a queue's sampled rows show one kind of drift, and the first few."""

    count: int = 0
    ids: list[str] = field(default_factory=list)

    def add(self, job_id: str) -> None:
        self.count += 1
        if len(self.ids) < NAMED:
            self.ids.append(job_id)


@dataclass
class QueueDrift:
    queue: str
    ready: int
    delayed: int
    leased: int
    sampled: int  # durable waiting, delayed and active rows compared
    complete: bool  # the sample covered every row of both planes
    heartbeat_ms: int
    unsignalled: Finding = field(default_factory=Finding)
    orphans: Finding = field(default_factory=Finding)
    leaseless: Finding = field(default_factory=Finding)
    lapsed: Finding = field(default_factory=Finding)
    lapsing: Finding = field(default_factory=Finding)
    workerless: Finding = field(default_factory=Finding)

    FINDINGS = ("unsignalled", "orphans", "leaseless", "lapsed", "lapsing", "workerless")

    @property
    def clean(self) -> bool:
        return all(getattr(self, name).count == 0 for name in self.FINDINGS)

    def to_json(self) -> dict[str, Any]:
        return {"queue": self.queue, "clean": self.clean, "complete": self.complete, "sampled": self.sampled,
                "heartbeat_ms": self.heartbeat_ms,
                "hot": {"ready": self.ready, "delayed": self.delayed, "leased": self.leased},
                **{name: {"count": getattr(self, name).count, "ids": getattr(self, name).ids}
                   for name in self.FINDINGS}}


@dataclass
class PlaneDrift:
    at: int
    sample: int
    queues: list[QueueDrift]
    truncated: bool
    leader: str | None
    last: dict[str, ServicePass | None]
    kept: list[ServicePass]
    cost_ms: float
    calls: int

    @property
    def clean(self) -> bool:
        return all(q.clean for q in self.queues)

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "clean": self.clean, "sample": self.sample, "truncated": self.truncated,
                "leader": self.leader, "cost": {"ms": round(self.cost_ms, 2), "calls": self.calls},
                "queues": [q.to_json() for q in self.queues],
                "last_passes": {k: None if v is None else v.to_value() for k, v in self.last.items()},
                "repairs": [p.to_value() for p in self.kept]}


def plane_drift(engine: Engine, queues: Sequence[str] | None = None, *, sample: int = SAMPLE,
                grace_ms: int = GRACE_MS, depths_age_ms: int = 0) -> PlaneDrift:
    """Compare the planes for ``queues`` (default: every known queue, :data:`MAX_QUEUES` at
    most), ``sample`` rows of each structure per queue; a job that moved within
    ``grace_ms`` is not drift yet. The hot depths may be the leader's count of at most
    ``depths_age_ms`` ago (kept_depths.py; 0: counted now)."""
    started = time.perf_counter()
    if queues is None:  # every queue's record read once: the names (with the declared ones) and leases
        recorded = recorded_queues(engine)
        names = sorted(set(engine.registry.queues) | set(recorded))
    else:
        names = list(queues)
        recorded = {r.id: r.value for r in engine.durable.get_many(QUEUE, names[:MAX_QUEUES])}
    truncated = len(names) > MAX_QUEUES
    now = now_ms()
    live = {str(w.get("id")) for w in live_workers(engine.hot, now=now)}
    counter = _Counter()
    names = names[:MAX_QUEUES]
    # Every queue's depths in one call (a pass over the hot rows in postgres mode, not one
    # per queue), or the leader's recent count of them.
    depths = read_depths(engine.hot, names, now=now, max_age_ms=depths_age_ms).depths
    compared = [_queue_drift(engine, name, sample, now - grace_ms, live, counter,
                             _heartbeat_ms(engine, name, recorded), depths.get(name, NO_DEPTHS)) for name in names]
    report = PlaneDrift(at=now, sample=sample, queues=compared, truncated=truncated,
                        leader=engine.hot.lock_owner(LEADER_LOCK, now), last=last_passes(engine),
                        kept=kept_passes(engine), cost_ms=0.0, calls=counter.calls + 6)
    report.cost_ms = (time.perf_counter() - started) * 1000
    return report


class _Counter:
    calls = 0


def _queue_drift(engine: Engine, queue: str, sample: int, settled: int, live: set[str], counter: _Counter,
                 heartbeat: int, depths: QueueDepths) -> QueueDrift:
    """One queue's findings; ``settled``: rows last changed before it may count as drift.
    Three plane calls when the planes agree (the durable scan, the hot sample, one read of
    three fields of the stored jobs it must look up), a presence check when the sample did
    not show every durable id, and two more to re-check what looks like drift."""
    durable, hot = engine.durable, engine.hot
    now = now_ms()
    namespace = job_namespace(queue)
    rows = durable.scan_statuses_page(namespace, (*PENDING, "active"), cursor=None, page=sample)[0][:sample]
    statuses = dict(rows)
    held = hot.sample(queue, limit=sample)
    drift = QueueDrift(queue, depths.ready, depths.delayed, depths.active, sampled=len(statuses),
                       complete=len(rows) < sample and max(depths.ready, depths.delayed, depths.active) <= sample,
                       heartbeat_ms=heartbeat)
    # The sample, read after the durable scan, shows its ids present: ask only about the others.
    shown = set(held.entries)
    unseen = [id for id in statuses if id not in shown]
    present = hot.present(queue, unseen) if unseen else set()
    absent = [id for id in unseen if id not in present]
    active = [id for id, status in statuses.items() if status == "active"]
    # Hot entries the durable sample does not hold: looked up in the same read (orphans if missing).
    entries = [id for id in held.entries if id not in statuses]
    values = durable.get_fields(namespace, list(dict.fromkeys([*absent, *active, *entries])), COMPARED)
    unknown = [id for id in entries if id not in values]
    counter.calls += 3 + (1 if unseen else 0)
    # Re-check on the hot plane after the durable read: a job signalled meanwhile is not
    # lost, and a completion deletes the durable job first, then drops the hot entry.
    recheck = list(dict.fromkeys([*absent, *unknown]))
    still = hot.present(queue, recheck) if recheck else set()
    counter.calls += 1 if recheck else 0
    suspects = [id for id in absent if id not in still and values.get(id) is not None
                and int(values[id].get("updatedAt") or 0) <= settled]  # else finished, signalled or just stored
    orphaned = [id for id in active if (value := values.get(id)) is not None and value.get("status") == "active"
                and str(value.get("workerId") or "") not in live | {""}
                and int(value.get("updatedAt") or 0) <= settled]
    invented = [id for id in unknown if id in still]
    # Read once more: a worker acks the hot plane before it deletes the durable job, so a
    # job finishing between the reads looks lost on both, then is gone or changed here.
    checked = list(dict.fromkeys([*suspects, *orphaned, *invented]))
    again = durable.get_fields(namespace, checked, COMPARED) if checked else {}
    counter.calls += 1 if checked else 0
    confirmed = {id for id in (*suspects, *orphaned)
                 if id in again and again[id].get("updatedAt") == values[id].get("updatedAt")}
    for id in suspects:
        if id in confirmed and again[id].get("status") in PENDING:
            drift.unsignalled.add(id)
        elif id in confirmed and again[id].get("status") == "active":
            drift.leaseless.add(id)
    for id in orphaned:
        if id in confirmed:
            drift.workerless.add(id)
    for id in invented:
        if id not in again:
            drift.orphans.add(id)
    for lease in held.leases:
        if lease.expires_at <= now:
            drift.lapsed.add(lease.job_id)
        elif lease.expires_at <= now + heartbeat:
            drift.lapsing.add(lease.job_id)
    return drift


def _heartbeat_ms(engine: Engine, queue: str, recorded: dict[str, Any]) -> int:
    """How often a live holder renews its leases (the worker's heartbeat: a third of the
    lease, 0.2 to 10 s); the lease declared here, else the one its workers recorded."""
    declared = engine.registry.queues.get(queue)
    lease = recorded.get(queue, {}).get("leaseMs")
    lease_ms = declared.lease_ms if declared is not None else lease if isinstance(lease, int) else DEFAULT_LEASE_MS
    return int(max(min(lease_ms / 3, 10_000), 200))
