"""The two planes' backend protocols. Modules talk to these (through the facades in
``oqronkit.durable`` and, later, ``oqronkit.hot``), never to a client library."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from .claim_limits import ClaimLimits, LimitedClaim, LimitedStart
from .hot_types import HotSample, Lease, QueueDepths, Signal
from .rate_types import RateAnswer, RateRequest
from .types import EncodedRow, ListQuery, LogAppend, Scope, StoredRecord, _Absent


@runtime_checkable
class DurableStore(Protocol):
    """Truth and history: the spec's three tables, every call scoped to one
    (project, environment).

    Backends wrap driver errors into :class:`~oqronkit.errors.BackendUnavailable`
    and hold no logging or metrics (the facade does that).
    """

    name: str
    #: True when the rows live in SQL tables the board's Django models can read.
    supports_sql: bool
    #: Where this store's writes commit; a hot plane with the same (not None) domain
    #: keeps its leases in the same database, so one transaction can settle a job on
    #: both planes (``apply_and_release``, which only such stores have).
    transaction_domain: str | None
    #: The engine URL of the SQL database holding this store's tables, whose connection
    #: an application may lend it (:mod:`oqronkit.backends.borrowed`); None for a store
    #: that cannot join an application's transaction (memory, Redis).
    joins_database: str | None
    #: Where one call can insert a job's row and signal it on the hot plane: a hot
    #: plane with the same (not None) domain is on the same server, and this store is
    #: then a :class:`SignallingStore` (postgres mode: one transaction; redis mode on a
    #: standalone server: one script).
    signal_domain: str | None

    def ensure_schema(self) -> None:
        """Create the three tables and their indexes if missing (never drops data)."""

    def has_table(self, table: str) -> bool:
        """Whether ``table`` exists in the target database (used for the v1 check)."""

    def close(self) -> None:
        """Release connections; the store is unusable afterwards."""

    def put_many(self, scope: Scope, rows: Sequence[EncodedRow]) -> None:
        """Upsert every row in one round trip (per table). An existing row keeps its
        ``inserted_at``; value, kind and ``expires_at`` are replaced."""

    def apply(
        self, scope: Scope, puts: Sequence[EncodedRow], deletes: Sequence[tuple[str, str, str]]
    ) -> None:
        """Upsert ``puts`` (as put_many) and delete ``deletes`` ((table, namespace, id)
        triples) in ONE transaction: a job moved to the dead-letter namespace, or
        completed jobs deleted with their final runs written, never half-happen."""

    def insert_many(self, scope: Scope, rows: Sequence[EncodedRow]) -> set[tuple[str, str]]:
        """Insert rows whose key is free; existing rows stay untouched. Returns the
        (namespace, id) pairs that were inserted. Race-free across processes."""

    def insert_new(self, scope: Scope, table: str, rows: Iterable[EncodedRow]) -> None:
        """Insert rows of ``table`` whose keys the caller made up (fresh random ids): all
        of them, or none and :class:`DuplicateRecord` when a key exists. Being spared the
        per-row conflict check lets a store take its fastest bulk path (a streamed COPY
        on Postgres). ``rows`` may be lazy; an exception raised while iterating it
        leaves nothing written."""

    def insert_guarded(self, scope: Scope, guard: EncodedRow, rows: Sequence[EncodedRow]) -> bool:
        """Atomically: if ``guard``'s key is free, insert it and upsert ``rows`` (any
        tables) and return True; else write nothing and return False. Race-free across
        processes, and a crash leaves all of it or none (a uniqueness record and its job)."""

    def get_many(self, scope: Scope, table: str, namespace: str, ids: Sequence[str]) -> list[StoredRecord]:
        """The rows among ``ids`` that exist, in no particular order."""

    def get_fields(self, scope: Scope, table: str, namespace: str, ids: Sequence[str],
                   fields: Sequence[str]) -> dict[str, dict[str, Any]]:
        """For each row among ``ids`` that exists, its top-level ``fields`` (those it has):
        a check that needs a few fields of many rows, without their whole values."""

    def delete_many(self, scope: Scope, table: str, namespace: str, ids: Sequence[str]) -> int:
        """Delete the rows among ``ids``; returns how many existed."""

    def compare_and_set(
        self,
        scope: Scope,
        table: str,
        namespace: str,
        id: str,
        expect: Mapping[str, Any] | _Absent,
        row: EncodedRow | None,
    ) -> bool:
        """Atomically: if the current row matches ``expect`` (``ABSENT``: no row; a
        mapping: the row exists and each listed top-level field equals the given JSON
        value), write ``row`` (or delete when None) and return True; else change
        nothing and return False."""

    def scan_statuses(
        self, scope: Scope, table: str, namespace: str, statuses: Sequence[str], cursor: str | None, limit: int
    ) -> tuple[list[tuple[str, str]], str | None]:
        """One page of ``(id, status)`` of the rows of ``namespace`` whose top-level
        ``status`` is one of ``statuses``, about ``limit`` of them, and the cursor of the
        next page (None after the last). Opaque cursors let each store walk its own
        structure without sorting or sending values back; a row may appear twice in
        one walk, never not at all if it was there throughout (the reconciler's pass)."""

    def list(self, scope: Scope, query: ListQuery) -> list[StoredRecord]:
        """One page of rows per ``query`` (keyset pagination, never OFFSET)."""

    def count(self, scope: Scope, table: str, *, namespace: str | None, kind: str | None) -> int:
        """Rows in ``table`` of one namespace and/or one kind."""

    def count_by_namespace(self, scope: Scope, table: str, kind: str) -> dict[str, int]:
        """Row counts of one kind grouped by namespace (e.g. DLQ depth per queue)."""

    def prune_expired(self, scope: Scope, table: str, now_ms: int) -> int:
        """Delete rows whose ``expires_at`` is at or before ``now_ms``."""

    def prune_older_than(
        self, scope: Scope, table: str, namespace: str, cutoff_ms: int, *, limit: int
    ) -> int:
        """Delete up to ``limit`` rows of ``namespace`` inserted before ``cutoff_ms``."""

    def append_log(self, scope: Scope, append: LogAppend) -> dict[str, int]:
        """Append to a log partition (:class:`LogAppend`); every id's offset, appended
        now or before."""

    def read_log(
        self, scope: Scope, table: str, namespace: str, partition: int, after: int, limit: int
    ) -> builtins.list[StoredRecord]:
        """Up to ``limit`` records of ``namespace`` whose ``value["partition"]`` is
        ``partition`` and ``value["offset"]`` is above ``after``, by offset."""


class SignallingStore(DurableStore, Protocol):
    """A durable store on the hot plane's server (:attr:`DurableStore.signal_domain`)."""

    def insert_and_signal(self, scope: Scope, rows: Sequence[EncodedRow], queue: str, signals: Sequence[Signal],
                          now: int) -> None:
        """Insert fresh ``rows`` and signal ``signals`` (of those rows) of ``queue`` atomically, in one
        round trip (:func:`oqronkit.queues.one_trip.add_in_one_trip`); a taken id raises
        :class:`~oqronkit.errors.DuplicateRecord`, and then nothing is written or signalled."""


@runtime_checkable
class ClaimingStore(SignallingStore, Protocol):
    """A durable store that claims on the hot plane of its server and reads the claimed
    rows in the same atomic call (postgres mode, and redis mode on a standalone server)."""

    def claim_and_read(self, scope: Scope, queue: str, table: str, namespace: str, *, worker_id: str, limit: int,
                       lease_ms: int, now: int) -> tuple[builtins.list[Lease], builtins.list[StoredRecord]]:
        """``HotPlane.claim`` of ``queue`` and the claimed jobs' rows of ``namespace`` in
        ``table``, in one round trip (a job whose row is gone: a lease, no record)."""


class ReleasingStore(SignallingStore, Protocol):
    """A durable store that shares its database with the hot plane (postgres mode)."""

    def apply_and_release(self, scope: Scope, puts: Sequence[EncodedRow], namespace: str, queue: str,
                          leases: Sequence[tuple[str, int]]) -> set[str]:
        """Write ``puts`` and release ``leases`` of ``queue`` in one transaction
        (:meth:`oqronkit.durable.DurablePlane.apply_and_release`)."""


@runtime_checkable
class HotPlane(Protocol):
    """Speed and coordination: claim structures, leases, locks, counters and
    ephemeral keys. Everything here may be lost and rebuilt from the durable plane.

    Every multi-step operation is atomic on the backend. Times are epoch ms passed in
    by the caller (``now``), so tests control the clock and nodes agree on one source.
    """

    name: str
    #: Where this plane's writes commit (see :attr:`DurableStore.transaction_domain`).
    transaction_domain: str | None
    #: As :attr:`DurableStore.joins_database`: a plane keeping its tables in that database.
    joins_database: str | None
    #: As :attr:`DurableStore.signal_domain`: a store with the same domain signals this
    #: plane's queues in the call that inserts the jobs.
    signal_domain: str | None
    #: True when the plane is also :class:`Broadcasting` (memory, Postgres, Redis).
    supports_broadcast: bool

    def ensure_ready(self) -> None:
        """Create whatever structures the backend needs (tables, scripts)."""

    def close(self) -> None:
        """Release connections; the plane is unusable afterwards."""

    # -- broker ------------------------------------------------------------------------

    def signal(self, scope: Scope, queue: str, signals: Sequence[Signal], now: int) -> None:
        """Make job ids claimable (or due later). A job id already ready, delayed or
        leased in this queue is left as it is: signalling is idempotent."""

    def claim(
        self, scope: Scope, queue: str, *, worker_id: str, limit: int, lease_ms: int, now: int
    ) -> list[Lease]:
        """Move due delayed jobs to ready, then take up to ``limit`` ready jobs in
        order (highest priority first, then enqueue order or its reverse for LIFO),
        each leased to ``worker_id`` until ``now + lease_ms`` under a fresh, strictly
        increasing fencing token."""

    def claim_limited(
        self, scope: Scope, queue: str, *, worker_id: str, limit: int, lease_ms: int, now: int,
        limits: ClaimLimits,
    ) -> LimitedClaim:
        """:meth:`claim`, cut to what the queue's cluster-wide ``limits`` allow, atomically
        with it: at most ``limits.concurrency`` minus the queue's live leases (expiring
        after ``now``), and at most ``limits.rate[0]`` minus the entries of the queue's
        rate log after ``at - limits.rate[1]``, where ``at`` is ``now`` or, if later, the
        log's latest entry; each lease taken is logged at ``at`` under its token. A claim
        cut short while ready jobs remained counts one held-back claim for ``now``'s minute."""

    def start_limited(
        self, scope: Scope, queue: str, *, tokens: Sequence[int], now: int, rate: tuple[int, int]
    ) -> LimitedStart:
        """The start gate of a queue whose ``rate`` is ``(n, window_ms)``, right before
        the handlers of the leases ``tokens`` (1 to ``n`` of them, from
        :meth:`claim_limited`) start: atomically, move their entries in the rate log (or
        add them) to ``at``, ``now`` or, if later, the log's latest entry, and answer
        ``at``, provided the log then holds at most ``n`` entries after ``at - window_ms``;
        otherwise log nothing and answer when enough entries leave that window. No
        half-open window of ``window_ms`` then holds more than ``n`` entries, so no more
        than ``n`` starts (each at its ``at``). Idempotent for the same tokens."""

    def limit_held(self, scope: Scope, queue: str, now: int) -> int:
        """Claims of ``queue`` that its limits held back in the hour before ``now``
        (per minute, so exact to a minute)."""

    def extend(
        self, scope: Scope, queue: str, leases: Sequence[Lease], *, lease_ms: int, now: int
    ) -> list[Lease]:
        """Renew the leases still held with their token (returned with the new
        expiry). A lease the plane lost entirely (not leased, ready or delayed, e.g.
        after a Redis restart) is re-created for the same token, so a live worker
        keeps its job; a lease taken by another token is not returned. A re-created
        token also raises the queue's token counter past it, so it is never handed out
        again."""

    def ack(self, scope: Scope, queue: str, leases: Sequence[Lease]) -> set[str]:
        """Drop leases whose token still matches; returns the job ids acknowledged."""

    def release(self, scope: Scope, queue: str, lease: Lease, signal: Signal, now: int) -> bool:
        """Give a held lease back as ``signal`` (ready again or due later) if the token
        still matches. ``signal.job_id`` must be the lease's job (ValueError otherwise)."""

    def take_expired(self, scope: Scope, queue: str, *, now: int, limit: int) -> list[Lease]:
        """Atomically remove and return up to ``limit`` leases that expired at or
        before ``now``; each expired lease is handed to exactly one caller, with the
        worker it was leased to (``""`` for a lease ``extend`` re-created)."""

    def leases_of(self, scope: Scope, queue: str, worker_id: str) -> list[Lease]:
        """Every lease of ``queue`` held by ``worker_id`` (expired or not, not yet taken),
        with its token and expiry. A read: what a worker whose claim or ack got no reply
        (the request may have run) asks once the plane answers, to find what it holds."""

    def remove(self, scope: Scope, queue: str, job_ids: Sequence[str]) -> set[str]:
        """Remove ids from ready and delayed (not from leases); returns those removed."""

    def promote(self, scope: Scope, queue: str, job_id: str, now: int) -> bool:
        """Make a delayed job ready now; False if it was not delayed."""

    def present(self, scope: Scope, queue: str, job_ids: Sequence[str]) -> set[str]:
        """The ids among ``job_ids`` that are ready, delayed or leased."""

    def sample(self, scope: Scope, queue: str, *, limit: int) -> HotSample:
        """Up to ``limit`` job ids of each of ready, delayed and leased, and the
        ``limit`` leases that lapse first (earliest first): index reads, whatever the
        queue's size (the board's plane drift)."""

    def depths(self, scope: Scope, queue: str, now: int) -> QueueDepths:
        """Ready (including due delayed), delayed (not yet due) and leased counts."""

    def next_due(self, scope: Scope, queue: str) -> int | None:
        """The earliest ``run_at`` in the due-time set, or None."""

    def wait(self, scope: Scope, queues: Sequence[str], timeout: float) -> bool:
        """Block up to ``timeout`` seconds until a job may have become ready in one of
        ``queues`` (True) or the time ran out (False). Spurious wake-ups are allowed.
        Delayed jobs coming due do not wake a waiter: callers cap ``timeout`` with
        :meth:`next_due`."""

    # -- locks and leader election ----------------------------------------------------

    def acquire_lock(self, scope: Scope, name: str, owner: str, *, ttl_ms: int, now: int) -> bool:
        """Take the lock, or renew it if ``owner`` already holds it."""

    def release_lock(self, scope: Scope, name: str, owner: str) -> bool:
        """Release the lock if ``owner`` holds it."""

    def lock_owner(self, scope: Scope, name: str, now: int) -> str | None:
        """Who holds the lock now, if anyone."""

    # -- counters and ephemeral keys ----------------------------------------------------

    def incr(self, scope: Scope, name: str, by: int = 1) -> int:
        """Atomically add ``by`` to a counter (starting at 0); returns the new value."""

    def get_counters(self, scope: Scope, names: Sequence[str]) -> dict[str, int]:
        """Current values (missing counters are 0)."""

    def kv_set(self, scope: Scope, group: str, items: Mapping[str, str], *, ttl_ms: int, now: int) -> None:
        """Set string values under ``group`` that vanish after ``ttl_ms`` (the live run
        overlay, worker heartbeats)."""

    def kv_get(self, scope: Scope, group: str, keys: Sequence[str], now: int) -> dict[str, str]:
        """Live values among ``keys``."""

    def kv_all(self, scope: Scope, group: str, now: int) -> dict[str, str]:
        """Every live value in ``group`` (groups are small: workers, running runs)."""

    def kv_delete(self, scope: Scope, group: str, keys: Sequence[str]) -> None:
        """Delete keys from ``group``."""

    # -- rate limits (algorithms: rate_step.py; state is hot only, expiring) ----------

    def rate_hit(self, scope: Scope, request: RateRequest, now: int) -> RateAnswer:
        """Check ``request.key`` against every tier in one atomic round trip: all tiers
        take ``request.cost`` or none does (cost 0 writes nothing); a denial counts a ban
        strike when ``request.ban`` is set. Only this key is serialised, never the plane."""

    def rate_drop(self, scope: Scope, name: str, key: str, fields: Sequence[str]) -> None:
        """Forget the named parts of a key's state (tier fields, ``"ban"``, ``"ov"``)."""

    def rate_override(self, scope: Scope, name: str, key: str, limits: Sequence[int], *, ttl_ms: int,
                      now: int) -> None:
        """Give ``key`` its own limits (one per tier), kept at least ``ttl_ms``."""

    def kv_get_with_counters(
        self, scope: Scope, group: str, keys: Sequence[str], counters: Sequence[str], now: int
    ) -> tuple[dict[str, str], dict[str, int]]:
        """:meth:`kv_get` and :meth:`get_counters` in one round trip (a cache read: its
        entries and their generations)."""

    def kv_prune(self, scope: Scope, group: str, now: int) -> int:
        """Delete the keys of ``group`` lapsed at ``now``; how many (large groups such as
        a cache's, whose writes do not prune on every plane)."""


class BroadcastSubscription(Protocol):
    """One :meth:`Broadcasting.listen`."""

    #: Set once messages published from now on are delivered; cleared while they may not be.
    ready: threading.Event

    def close(self) -> None:
        """Stop calling the handler."""


class Broadcasting(HotPlane, Protocol):
    """A hot plane that can send a message to every process listening (the cache's L1
    invalidations). Best effort: a handler is called with None when messages may have
    been lost (a reconnect), and must then assume anything changed."""

    def broadcast(self, scope: Scope, channel: str, message: str) -> None:
        """Send ``message`` to every listener of ``channel`` in ``scope``, this process's too."""

    def listen(self, scope: Scope, channel: str, handler: Callable[[str | None], None]) -> BroadcastSubscription:
        """Call ``handler`` (on a background thread, or in the sender's thread in
        process) with each message of ``channel``, or None after a possible loss."""
