"""In-process hot plane: heaps and dicts under one lock, held to the same contract
suite as the SQLite, Postgres and Redis hot planes."""

from __future__ import annotations

import heapq
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice

from .broadcast_local import LocalBroadcast
from .claim_limits import ClaimLimits, LimitedClaim, LimitedStart, LimitState, admit, held_in_last_hour, record, room
from .hot_types import HotSample, Lease, QueueDepths, Signal
from .memory_rates import MemoryRates
from .rate_types import RateAnswer, RateRequest
from .types import Scope


@dataclass
class _Queue:
    seq: int = 0
    token: int = 0
    # job_id -> ordering key; the heap may hold stale entries, skipped on pop.
    ready: dict[str, tuple[int, int]] = field(default_factory=dict)
    ready_heap: list[tuple[tuple[int, int], str]] = field(default_factory=list)
    delayed: dict[str, tuple[int, Signal]] = field(default_factory=dict)
    delayed_heap: list[tuple[int, str]] = field(default_factory=list)
    leases: dict[str, tuple[int, int, str]] = field(default_factory=dict)  # id -> token, expiry, worker
    limits: LimitState = field(default_factory=LimitState)  # cluster-wide limits' start log and held counts


class MemoryHotPlane(LocalBroadcast):
    """Hot plane for the ``memory`` mode and fast tests."""

    name = "memory"
    transaction_domain: str | None = None
    joins_database: str | None = None
    signal_domain: str | None = None

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._queues: dict[tuple[Scope, str], _Queue] = {}
        self._locks: dict[tuple[Scope, str], tuple[str, int]] = {}
        self._counters: dict[tuple[Scope, str], int] = {}
        self._kv: dict[tuple[Scope, str], dict[str, tuple[str, int]]] = {}
        self._rates = MemoryRates()  # its own striped locks: a check never takes self._lock

    def ensure_ready(self) -> None:
        return None

    def close(self) -> None:
        return None

    # -- broker ------------------------------------------------------------------------

    def _q(self, scope: Scope, queue: str) -> _Queue:
        return self._queues.setdefault((scope, queue), _Queue())

    def _push_ready(self, q: _Queue, signal: Signal) -> None:
        q.seq += 1
        key = (-signal.priority, -q.seq if signal.lifo else q.seq)
        q.ready[signal.job_id] = key
        heapq.heappush(q.ready_heap, (key, signal.job_id))

    def _place(self, q: _Queue, signal: Signal, now: int) -> None:
        if signal.run_at is not None and signal.run_at > now:
            q.delayed[signal.job_id] = (signal.run_at, signal)
            heapq.heappush(q.delayed_heap, (signal.run_at, signal.job_id))
        else:
            self._push_ready(q, signal)

    def signal(self, scope: Scope, queue: str, signals: Sequence[Signal], now: int) -> None:
        with self._lock:
            q = self._q(scope, queue)
            for s in signals:
                if s.job_id in q.ready or s.job_id in q.delayed or s.job_id in q.leases:
                    continue
                self._place(q, s, now)
            self._changed.notify_all()

    def _promote_due(self, q: _Queue, now: int) -> None:
        while q.delayed_heap and q.delayed_heap[0][0] <= now:
            run_at, job_id = heapq.heappop(q.delayed_heap)
            entry = q.delayed.get(job_id)
            if entry is None or entry[0] != run_at:
                continue
            del q.delayed[job_id]
            self._push_ready(q, entry[1])

    def claim(
        self, scope: Scope, queue: str, *, worker_id: str, limit: int, lease_ms: int, now: int
    ) -> list[Lease]:
        with self._lock:
            q = self._q(scope, queue)
            self._promote_due(q, now)
            return self._take(q, worker_id, limit, lease_ms, now)

    def claim_limited(
        self, scope: Scope, queue: str, *, worker_id: str, limit: int, lease_ms: int, now: int,
        limits: ClaimLimits,
    ) -> LimitedClaim:
        with self._lock:  # the one lock makes the count, the claim and the log one step
            q = self._q(scope, queue)
            self._promote_due(q, now)
            live = sum(1 for _token, expiry, _w in q.leases.values() if expiry > now)
            allowed = room(q.limits, limits, live=live, limit=limit, now=now)
            leases = self._take(q, worker_id, allowed, lease_ms, now)
            held = allowed < limit and bool(q.ready)
            retry_at = record(q.limits, limits, tokens=[le.token for le in leases], held=held, now=now)
            return LimitedClaim(leases, held, retry_at if held else None)

    def start_limited(self, scope: Scope, queue: str, *, tokens: Sequence[int], now: int,
                      rate: tuple[int, int]) -> LimitedStart:
        with self._lock:
            return admit(self._q(scope, queue).limits, rate, tokens=list(tokens), now=now)

    def limit_held(self, scope: Scope, queue: str, now: int) -> int:
        with self._lock:
            return held_in_last_hour(self._q(scope, queue).limits.held, now)

    def _take(self, q: _Queue, worker_id: str, limit: int, lease_ms: int, now: int) -> list[Lease]:
        """Lease up to ``limit`` ready jobs in claim order (the lock held)."""
        leases: list[Lease] = []
        while q.ready_heap and len(leases) < limit:
            key, job_id = heapq.heappop(q.ready_heap)
            if q.ready.get(job_id) != key:
                continue
            del q.ready[job_id]
            q.token += 1
            q.leases[job_id] = (q.token, now + lease_ms, worker_id)
            leases.append(Lease(job_id, q.token, now + lease_ms))
        return leases

    def extend(
        self, scope: Scope, queue: str, leases: Sequence[Lease], *, lease_ms: int, now: int
    ) -> list[Lease]:
        kept: list[Lease] = []
        with self._lock:
            q = self._q(scope, queue)
            for lease in leases:
                held = q.leases.get(lease.job_id)
                lost = held is None and lease.job_id not in q.ready and lease.job_id not in q.delayed
                if (held is not None and held[0] == lease.token) or lost:
                    worker = held[2] if held else ""
                    q.token = max(q.token, lease.token)
                    q.leases[lease.job_id] = (lease.token, now + lease_ms, worker)
                    kept.append(Lease(lease.job_id, lease.token, now + lease_ms))
        return kept

    def ack(self, scope: Scope, queue: str, leases: Sequence[Lease]) -> set[str]:
        done: set[str] = set()
        with self._lock:
            q = self._q(scope, queue)
            for lease in leases:
                held = q.leases.get(lease.job_id)
                if held is not None and held[0] == lease.token:
                    del q.leases[lease.job_id]
                    done.add(lease.job_id)
        return done

    def release(self, scope: Scope, queue: str, lease: Lease, signal: Signal, now: int) -> bool:
        if signal.job_id != lease.job_id:
            raise ValueError(f"release: signal is for {signal.job_id!r}, the lease for {lease.job_id!r}")
        with self._lock:
            q = self._q(scope, queue)
            held = q.leases.get(lease.job_id)
            if held is None or held[0] != lease.token:
                return False
            del q.leases[lease.job_id]
            self._place(q, signal, now)
            self._changed.notify_all()
            return True

    def take_expired(self, scope: Scope, queue: str, *, now: int, limit: int) -> list[Lease]:
        with self._lock:
            q = self._q(scope, queue)
            expired = sorted(
                (expiry, job_id, token, worker) for job_id, (token, expiry, worker) in q.leases.items()
                if expiry <= now
            )[:limit]
            for _expiry, job_id, _token, _worker in expired:
                del q.leases[job_id]
            return [Lease(job_id, token, expiry, worker) for expiry, job_id, token, worker in expired]

    def leases_of(self, scope: Scope, queue: str, worker_id: str) -> list[Lease]:
        with self._lock:
            held = self._q(scope, queue).leases.items()
            return sorted((Lease(job_id, token, expiry, worker) for job_id, (token, expiry, worker) in held
                           if worker == worker_id), key=lambda lease: lease.token)

    def remove(self, scope: Scope, queue: str, job_ids: Sequence[str]) -> set[str]:
        removed: set[str] = set()
        with self._lock:
            q = self._q(scope, queue)
            for job_id in job_ids:
                if q.ready.pop(job_id, None) is not None or q.delayed.pop(job_id, None) is not None:
                    removed.add(job_id)
        return removed

    def promote(self, scope: Scope, queue: str, job_id: str, now: int) -> bool:
        with self._lock:
            q = self._q(scope, queue)
            entry = q.delayed.pop(job_id, None)
            if entry is None:
                return False
            self._push_ready(q, entry[1])
            self._changed.notify_all()
            return True

    def present(self, scope: Scope, queue: str, job_ids: Sequence[str]) -> set[str]:
        with self._lock:
            q = self._q(scope, queue)
            return {j for j in job_ids if j in q.ready or j in q.delayed or j in q.leases}

    def sample(self, scope: Scope, queue: str, *, limit: int) -> HotSample:
        with self._lock:
            q = self._q(scope, queue)
            if limit <= 0:
                return HotSample((), ())
            ids = [*islice(q.ready, limit), *islice(q.delayed, limit)]
            first = sorted((expiry, job_id, token) for job_id, (token, expiry, _w) in q.leases.items())[:limit]
            leases = tuple(Lease(job_id, token, expiry) for expiry, job_id, token in first)
            return HotSample(tuple(dict.fromkeys([*ids, *(lease.job_id for lease in leases)])), leases)

    def depths(self, scope: Scope, queue: str, now: int) -> QueueDepths:
        with self._lock:
            q = self._q(scope, queue)
            due = sum(1 for run_at, _s in q.delayed.values() if run_at <= now)
            return QueueDepths(len(q.ready) + due, len(q.delayed) - due, len(q.leases))

    def next_due(self, scope: Scope, queue: str) -> int | None:
        with self._lock:
            q = self._q(scope, queue)
            return min((run_at for run_at, _s in q.delayed.values()), default=None)

    def wait(self, scope: Scope, queues: Sequence[str], timeout: float) -> bool:
        with self._lock:
            if any(self._q(scope, name).ready for name in queues):
                return True
            return self._changed.wait(timeout)

    # -- locks ---------------------------------------------------------------------------

    def acquire_lock(self, scope: Scope, name: str, owner: str, *, ttl_ms: int, now: int) -> bool:
        with self._lock:
            held = self._locks.get((scope, name))
            if held is not None and held[0] != owner and held[1] > now:
                return False
            self._locks[(scope, name)] = (owner, now + ttl_ms)
            return True

    def release_lock(self, scope: Scope, name: str, owner: str) -> bool:
        with self._lock:
            held = self._locks.get((scope, name))
            if held is None or held[0] != owner:
                return False
            del self._locks[(scope, name)]
            return True

    def lock_owner(self, scope: Scope, name: str, now: int) -> str | None:
        with self._lock:
            held = self._locks.get((scope, name))
            return held[0] if held is not None and held[1] > now else None

    # -- counters and ephemeral keys ---------------------------------------------------

    def incr(self, scope: Scope, name: str, by: int = 1) -> int:
        with self._lock:
            value = self._counters.get((scope, name), 0) + by
            self._counters[(scope, name)] = value
            return value

    def get_counters(self, scope: Scope, names: Sequence[str]) -> dict[str, int]:
        with self._lock:
            return {n: self._counters.get((scope, n), 0) for n in names}

    def kv_set(self, scope: Scope, group: str, items: Mapping[str, str], *, ttl_ms: int, now: int) -> None:
        with self._lock:
            bucket = self._kv.setdefault((scope, group), {})
            for key, value in items.items():
                bucket[key] = (value, now + ttl_ms)

    def kv_get(self, scope: Scope, group: str, keys: Sequence[str], now: int) -> dict[str, str]:
        with self._lock:
            bucket = self._kv.get((scope, group), {})
            return {k: bucket[k][0] for k in keys if k in bucket and bucket[k][1] > now}

    def kv_all(self, scope: Scope, group: str, now: int) -> dict[str, str]:
        with self._lock:
            bucket = self._kv.get((scope, group), {})
            for key in [k for k, (_v, exp) in bucket.items() if exp <= now]:
                del bucket[key]
            return {k: v for k, (v, _e) in bucket.items()}

    def kv_get_with_counters(
        self, scope: Scope, group: str, keys: Sequence[str], counters: Sequence[str], now: int
    ) -> tuple[dict[str, str], dict[str, int]]:
        with self._lock:
            return self.kv_get(scope, group, keys, now), self.get_counters(scope, counters)

    def kv_prune(self, scope: Scope, group: str, now: int) -> int:
        with self._lock:
            bucket = self._kv.get((scope, group), {})
            gone = [k for k, (_v, exp) in bucket.items() if exp <= now]
            for key in gone:
                del bucket[key]
            return len(gone)

    def kv_delete(self, scope: Scope, group: str, keys: Sequence[str]) -> None:
        with self._lock:
            bucket = self._kv.get((scope, group), {})
            for key in keys:
                bucket.pop(key, None)

    # -- rate limits -------------------------------------------------------------------

    def rate_hit(self, scope: Scope, request: RateRequest, now: int) -> RateAnswer:
        return self._rates.hit(scope, request, now)

    def rate_drop(self, scope: Scope, name: str, key: str, fields: Sequence[str]) -> None:
        self._rates.drop(scope, name, key, fields)

    def rate_override(self, scope: Scope, name: str, key: str, limits: Sequence[int], *, ttl_ms: int,
                      now: int) -> None:
        self._rates.override(scope, name, key, limits, ttl_ms=ttl_ms, now=now)
