"""PostgreSQL hot plane: the broker, leases, locks, counters and ephemeral keys of the
``postgres`` mode, for teams without Redis.

Claims take rows with ``FOR UPDATE SKIP LOCKED``, so concurrent workers in any number of
processes stay disjoint without waiting on each other; wake-ups travel by
LISTEN/NOTIFY; the tables are UNLOGGED and the sessions commit asynchronously, because
hot state may be lost and is rebuilt by the engine's reconciler. Every batch is one
statement (arrays unnested server-side), so one call is one round trip.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import psycopg
from psycopg import sql

from ...clock import now_ms
from ...errors import BackendUnavailable
from ..hot_types import Lease, QueueDepths, Signal
from ..rate_step import ttl_ms as rate_ttl_ms
from ..rate_types import RateAnswer, RateRequest
from ..sqlfiles import load_queries, load_sql
from ..types import Scope
from .arrays import BigintArray, TextArray
from .broadcast import PostgresBroadcast
from .epoch import EpochWatch
from .heads import FloorRaiser
from .pool import LazyPool
from .sample import PostgresHotMixins
from .upkeep import HorizonWatch, table_upkeep

_PACKAGE = "oqronkit.backends.postgres"
QUERIES = load_queries(_PACKAGE, "sql/hot_queries.sql")
SCHEMA = load_sql(_PACKAGE, "sql/hot_schema.sql")
#: Every relation and function hot_schema.sql creates; ensure_ready skips the script
#: (whose CREATE INDEX IF NOT EXISTS would briefly lock out writers) when all resolve, so
#: a function's new _vN name alone makes it run again.
SCHEMA_OBJECTS: tuple[str, ...] = tuple(re.findall(r"(?:IF NOT EXISTS|OR REPLACE FUNCTION)\s+(\w+)", SCHEMA))
_LISTEN = sql.SQL(QUERIES["listen"])

#: wait() blocks on the socket in slices this long, so close() never waits long behind it.
_WAIT_SLICE = 0.25
#: How often a thread that finds the plane's listener busy checks for ready jobs itself.
_POLL_INTERVAL = 0.05


def channel_for(scope: Scope, queue: str) -> str:
    """The NOTIFY channel of one queue: a fixed-length, always valid identifier, since
    project, environment and queue names may hold anything."""
    key = "\0".join((scope.project, scope.environment, queue)).encode()
    return "oqron_" + hashlib.sha1(key).hexdigest()[:24]


#: The tables of hot_schema.sql, for table upkeep.
HOT_TABLES = ("oqron_hot_jobs", "oqron_hot_kv", "oqron_hot_locks", "oqron_hot_counters", "oqron_hot_rates",
              "oqron_hot_qlimits", "oqron_hot_heads")


class PostgresHotPlane(PostgresBroadcast, PostgresHotMixins):
    """Hot plane on PostgreSQL (``postgres`` mode).

    The pool opens on first use, so building a plane never touches the network. Pool
    connections run in autocommit with ``synchronous_commit = off``; ``wait`` uses one
    extra long-lived connection that keeps LISTENing to every queue it was asked about,
    so notifications sent between two waits are buffered, not lost.
    """

    name = "postgres"
    def __init__(
        self, url: str, *, min_size: int = 1, max_size: int = 8, connect_timeout: float = 10.0
    ) -> None:
        self.transaction_domain: str | None = url
        self.joins_database: str | None = url
        self.signal_domain: str | None = url
        self._epoch = EpochWatch()
        self._horizon = HorizonWatch()
        self._pool = LazyPool(
            url, "oqronkit-hot", label="hot plane", min_size=min_size, max_size=max_size,
            timeout=connect_timeout, autocommit=True, configure=self._configure,
        )
        self._floors = FloorRaiser(self._pool)
        # One thread at a time owns the listener; the others poll (see wait).
        self._listen_lock = threading.Lock()
        self._listener: psycopg.Connection[Any] | None = None
        self._listening: set[str] = set()

    # -- lifecycle -------------------------------------------------------------------

    def ensure_ready(self) -> None:
        with self._pool.connection() as conn:
            created = bool(conn.execute(QUERIES["missing_objects"], {"names": list(SCHEMA_OBJECTS)}).fetchall())
            if created:
                # One transaction; the script's advisory lock serialises processes.
                with conn.transaction():
                    conn.execute(SCHEMA)
            self._epoch.check(conn, created=created)

    @property
    def resets(self) -> int:
        """How many times this process found the hot tables emptied by a crash (epoch.py)."""
        return self._epoch.resets

    @property
    def epoch(self) -> str | None:
        return self._epoch.epoch

    def upkeep(self) -> list[str]:
        """ANALYZE / VACUUM the hot tables where autovacuum lags (see upkeep.py)."""
        with self._pool.connection() as conn:
            conn.execute(QUERIES["rate_prune"], {"now": now_ms()})  # abandoned keys never pile up
            return table_upkeep(conn, HOT_TABLES)

    def after_horizon(self) -> list[str]:
        """VACUUM the hot tables once a transaction that held the horizon ended (upkeep.py)."""
        with self._pool.connection() as conn:
            return self._horizon.step(conn, HOT_TABLES)

    def close(self) -> None:
        self._pool.close()
        self._close_broadcast()
        with self._listen_lock:  # a wait in progress gives it up within one slice
            self._drop_listener()

    # -- broker ----------------------------------------------------------------------

    def signal(self, scope: Scope, queue: str, signals: Sequence[Signal], now: int) -> None:
        if not signals:
            return
        self._run("signal", signal_params(scope, queue, signals, now))

    def claim(
        self, scope: Scope, queue: str, *, worker_id: str, limit: int, lease_ms: int, now: int
    ) -> list[Lease]:
        if limit <= 0:
            return []
        keys = _keys(scope, queue, now=now)
        lease = {"limit": limit, "expires_at": now + lease_ms, "worker": worker_id}

        def claim(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
            # A sibling CTE could not see rows promoted in the same statement, so these
            # are two statements, pipelined: still one round trip.
            with conn.pipeline():
                conn.execute(QUERIES["promote_due"], keys)
                cursor = conn.execute(QUERIES["claim"], {**keys, **lease})
            return cursor.fetchall()

        # A dead connection (a restart) must not pause claiming: one more try on a new
        # one. Leases a lost first try took lapse to the rescuer under their own tokens.
        rows = self._pool.once_more_if_lost(claim)
        self._floors.after_claim(keys, rows)
        rows.sort(key=lambda r: r[1])  # tokens were drawn in claim order
        return [Lease(job_id, token, expires_at) for job_id, token, expires_at, *_ in rows]

    def extend(
        self, scope: Scope, queue: str, leases: Sequence[Lease], *, lease_ms: int, now: int
    ) -> list[Lease]:
        if not leases:
            return []
        rows = self._run("extend", _keys(scope, queue, expires_at=now + lease_ms, **_lease_columns(leases)))
        renewed = {job_id: Lease(job_id, token, expires_at) for job_id, token, expires_at, _ in rows}
        recreated = [token for _, token, _, created in rows if created]
        if recreated:  # the plane had lost these: their tokens must never be drawn again
            self._run("raise_token", {"token": max(recreated)})
        # Input order, each id once (the first lease given for an id is the one tried).
        ids = dict.fromkeys(lease.job_id for lease in leases)
        return [renewed[job_id] for job_id in ids if job_id in renewed]

    def ack(self, scope: Scope, queue: str, leases: Sequence[Lease]) -> set[str]:
        if not leases:
            return set()
        rows = self._run("ack", _keys(scope, queue, **_lease_columns(leases)))
        return {job_id for (job_id,) in rows}

    def release(self, scope: Scope, queue: str, lease: Lease, signal: Signal, now: int) -> bool:
        if signal.job_id != lease.job_id:
            raise ValueError(f"release() puts back the leased job {lease.job_id!r}, not {signal.job_id!r}.")
        rows = self._run("release", _keys(
            scope, queue, job_id=lease.job_id, token=lease.token, now=now, channel=channel_for(scope, queue),
            priority=signal.priority, lifo=signal.lifo, run_at=signal.run_at,
        ))
        return bool(rows)

    def take_expired(self, scope: Scope, queue: str, *, now: int, limit: int) -> list[Lease]:
        if limit <= 0:
            return []
        rows = self._run("take_expired", _keys(scope, queue, now=now, limit=limit))
        rows.sort(key=lambda r: (r[2], r[0]))  # earliest expiry first, as the memory plane
        return [Lease(job_id, token, expires_at, worker or "") for job_id, token, expires_at, worker in rows]

    def leases_of(self, scope: Scope, queue: str, worker_id: str) -> list[Lease]:
        rows = self._run("leases_of", _keys(scope, queue, worker=worker_id))
        return [Lease(job_id, token, expires_at, worker_id) for job_id, token, expires_at in rows]

    def remove(self, scope: Scope, queue: str, job_ids: Sequence[str]) -> set[str]:
        if not job_ids:
            return set()
        return {job_id for (job_id,) in self._run("remove", _keys(scope, queue, ids=TextArray(job_ids)))}

    def promote(self, scope: Scope, queue: str, job_id: str, now: int) -> bool:
        params = _keys(scope, queue, job_id=job_id, channel=channel_for(scope, queue))
        return bool(self._run("promote", params))

    def present(self, scope: Scope, queue: str, job_ids: Sequence[str]) -> set[str]:
        if not job_ids:
            return set()
        return {job_id for (job_id,) in self._run("present", _keys(scope, queue, ids=TextArray(job_ids)))}

    def depths(self, scope: Scope, queue: str, now: int) -> QueueDepths:
        [(ready, delayed, active)] = self._run("depths", _keys(scope, queue, now=now))
        return QueueDepths(ready, delayed, active)

    def depths_many(self, scope: Scope, queues: Sequence[str], now: int) -> dict[str, QueueDepths]:
        """:meth:`depths` of several queues with one statement over the scope's rows
        (queues without jobs are absent)."""
        wanted = set(queues)
        rows = self._run("depths_many", _scoped(scope, now=now))
        return {queue: QueueDepths(ready, delayed, active)
                for queue, ready, delayed, active in rows if queue in wanted}

    def next_due(self, scope: Scope, queue: str) -> int | None:
        due: int | None
        [(due,)] = self._run("next_due", _keys(scope, queue))
        return due

    def wait(self, scope: Scope, queues: Sequence[str], timeout: float) -> bool:
        deadline = time.monotonic() + max(0.0, timeout)
        ready = {"project": scope.project, "environment": scope.environment, "queues": list(queues)}
        channels = {channel_for(scope, queue) for queue in queues}
        while True:
            # Whoever gets the listener blocks on it; a thread finding it busy checks
            # the tables every _POLL_INTERVAL until it is free or time runs out.
            slot = max(0.0, min(_POLL_INTERVAL, deadline - time.monotonic()))
            if self._listen_lock.acquire(timeout=slot):
                try:
                    return self._listen(ready, channels, deadline)
                finally:
                    self._listen_lock.release()
            if self._run("any_ready", ready)[0][0]:
                return True
            if time.monotonic() >= deadline:
                return False

    def _listen(self, ready: dict[str, Any], channels: set[str], deadline: float) -> bool:
        """wait() while holding the listener: LISTEN, drain, check, then block."""
        try:
            conn = self._listener_connection()
            for channel in sorted(channels - self._listening):
                conn.execute(_LISTEN.format(channel=sql.Identifier(channel)))
                self._listening.add(channel)
            # Notifications buffered since the last wait are covered by the check that
            # follows; anything committed after it notifies the connection anew.
            for _note in conn.notifies(timeout=0):
                pass
            if conn.execute(QUERIES["any_ready"], ready).fetchone() == (True,):
                return True
            while not self._pool.closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                for note in conn.notifies(timeout=min(_WAIT_SLICE, remaining)):
                    if note.channel in channels:
                        return True
            raise self._pool.closed_error()
        except psycopg.Error as exc:
            self._drop_listener()  # reconnect (and LISTEN again) on the next wait
            raise BackendUnavailable(f"PostgreSQL at {self._pool.where} failed: {exc}") from exc

    def _listener_connection(self) -> psycopg.Connection[Any]:
        if self._pool.closed:
            raise self._pool.closed_error()
        if self._listener is None or self._listener.closed:
            self._listening.clear()
            self._listener = psycopg.connect(
                self._pool.url, autocommit=True, connect_timeout=self._pool.connect_timeout
            )
        return self._listener

    def _drop_listener(self) -> None:
        conn, self._listener = self._listener, None
        self._listening.clear()
        if conn is not None:
            conn.close()

    # -- locks and leader election ---------------------------------------------------

    def acquire_lock(self, scope: Scope, name: str, owner: str, *, ttl_ms: int, now: int) -> bool:
        params = _scoped(scope, name=name, owner=owner, now=now, expires_at=now + ttl_ms)
        return bool(self._run("acquire_lock", params))

    def release_lock(self, scope: Scope, name: str, owner: str) -> bool:
        return bool(self._run("release_lock", _scoped(scope, name=name, owner=owner)))

    def lock_owner(self, scope: Scope, name: str, now: int) -> str | None:
        rows = self._run("lock_owner", _scoped(scope, name=name, now=now))
        return rows[0][0] if rows else None

    # -- counters and ephemeral keys -------------------------------------------------

    def incr(self, scope: Scope, name: str, by: int = 1) -> int:
        return int(self._run("incr", _scoped(scope, name=name, by=by))[0][0])

    def get_counters(self, scope: Scope, names: Sequence[str]) -> dict[str, int]:
        found = dict(self._run("get_counters", _scoped(scope, names=TextArray(names)))) if names else {}
        return {name: int(found.get(name, 0)) for name in names}

    def kv_set(self, scope: Scope, group: str, items: Mapping[str, str], *, ttl_ms: int, now: int) -> None:
        if items:
            self._run("kv_set", _scoped(
                scope, group=group, keys=TextArray(items), values=TextArray(items.values()), expires_at=now + ttl_ms,
            ))

    def kv_get(self, scope: Scope, group: str, keys: Sequence[str], now: int) -> dict[str, str]:
        if not keys:
            return {}
        return dict(self._run("kv_get", _scoped(scope, group=group, keys=TextArray(keys), now=now)))

    def kv_all(self, scope: Scope, group: str, now: int) -> dict[str, str]:
        return dict(self._run("kv_all", _scoped(scope, group=group, now=now)))

    def kv_get_with_counters(
        self, scope: Scope, group: str, keys: Sequence[str], counters: Sequence[str], now: int
    ) -> tuple[dict[str, str], dict[str, int]]:
        rows = self._run("kv_get_with_counters", _scoped(
            scope, group=group, keys=TextArray(keys), names=TextArray(counters), now=now))
        values = {key: value for kind, key, value in rows if kind == "v"}
        found = {name: int(value) for kind, name, value in rows if kind == "c"}
        return values, {name: found.get(name, 0) for name in counters}

    def kv_prune(self, scope: Scope, group: str, now: int) -> int:
        [(count,)] = self._run("kv_prune", _scoped(scope, group=group, now=now))
        return int(count)

    def kv_delete(self, scope: Scope, group: str, keys: Sequence[str]) -> None:
        if keys:
            self._run("kv_delete", _scoped(scope, group=group, keys=TextArray(keys)))

    # -- rate limits (oqron_rate_hit_v4 in hot_schema.sql) -------------------------------

    def rate_hit(self, scope: Scope, request: RateRequest, now: int) -> RateAnswer:
        ban = request.ban
        tiers = request.tiers
        reply = self._run("rate_hit", _scoped(
            scope, name=request.name, key=request.key, now=now, cost=request.cost, ttl=rate_ttl_ms(request),
            ban=BigintArray([ban.strikes, ban.window_ms, ban.duration_ms] if ban else []),
            algorithms=TextArray([t.algorithm for t in tiers]), limits=BigintArray([t.limit for t in tiers]),
            periods=BigintArray([t.period_ms for t in tiers]), fields=TextArray([t.field for t in tiers]),
        ))[0][0]
        return RateAnswer(bool(reply[0]), reply[1], reply[2], reply[3], reply[4], banned=bool(reply[5]), tier=reply[6])

    def rate_drop(self, scope: Scope, name: str, key: str, fields: Sequence[str]) -> None:
        if fields:
            self._run("rate_drop", _scoped(scope, name=name, key=key, fields=TextArray(fields)))

    def rate_override(self, scope: Scope, name: str, key: str, limits: Sequence[int], *, ttl_ms: int,
                      now: int) -> None:
        self._run("rate_override", _scoped(scope, name=name, key=key, limits=BigintArray(list(limits)), now=now,
                                           expires_at=now + ttl_ms))

    # -- connections -----------------------------------------------------------------

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute(QUERIES["session_setup"])
        self._epoch.check(conn)

    def _connection(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        return self._pool.connection()

    def _run(self, name: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """One named statement, autocommitted; its rows (none for a bare write)."""
        with self._pool.connection() as conn:
            cursor = conn.execute(QUERIES[name], params)
            return cursor.fetchall() if cursor.description is not None else []


def _lease_columns(leases: Sequence[Lease]) -> dict[str, Any]:
    return {"ids": TextArray([lease.job_id for lease in leases]),
            "tokens": BigintArray([lease.token for lease in leases])}


def signal_params(scope: Scope, queue: str, signals: Sequence[Signal], now: int) -> dict[str, Any]:
    """The ``signal`` statement's parameters (also sent by the durable store's one-trip add)."""
    return _keys(scope, queue, now=now, channel=channel_for(scope, queue),
                 ids=TextArray([s.job_id for s in signals]), priorities=BigintArray([s.priority for s in signals]),
                 run_ats=BigintArray([s.run_at for s in signals]), lifos=[s.lifo for s in signals])


def _keys(scope: Scope, queue: str, **more: Any) -> dict[str, Any]:
    return {"project": scope.project, "environment": scope.environment, "queue": queue, **more}


def _scoped(scope: Scope, **more: Any) -> dict[str, Any]:
    return {"project": scope.project, "environment": scope.environment, **more}

