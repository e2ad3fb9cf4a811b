"""Hot plane on SQLite: the ``sqlite`` mode's broker, leases, locks, counters and
ephemeral keys, in the same file as the durable tables and shared by every thread and
process of one machine.

Concurrency model (as in :mod:`.sqlite`, see :mod:`.sqlite_conn`): WAL journal, a busy
timeout, one connection per thread (shared with the durable store on the same file), and
every write as one explicit ``BEGIN IMMEDIATE`` transaction, so the write lock serialises
claimers across processes and no job is handed out twice. A per-file ``threading.Lock``
also serialises this process's writers (the durable store's too), so threads queue on a
Python lock (woken at once) rather than on SQLite's busy handler (which sleeps and retries).

Wake-ups: ``signal``/``release``/``promote`` notify waiters of this process through a
condition variable; waiters also poll ``PRAGMA data_version`` every few ms, which
changes whenever another connection commits. SQL: ``sql/sqlite/hot_*.sql``; times: the callers' ``now``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import ConfigurationError
from . import sqlite_rates
from .hot_types import Lease, QueueDepths, Signal
from .rate_types import RateAnswer, RateRequest
from .sqlfiles import load_queries, load_sql
from .sqlite_conn import BUSY_TIMEOUT_S, SQLiteConnections
from .sqlite_hot_sample import SQLiteHotMixins
from .types import Scope

POLL_INTERVAL_S = 0.01  # cross-process wake-up latency of wait(), at one PRAGMA per tick

_RATE_PRUNE_EVERY = 4096
_SCHEMA = load_sql("oqronkit.backends", "sql/sqlite/hot_schema.sql")
_Q = load_queries("oqronkit.backends", "sql/sqlite/hot_queries.sql")


class SQLiteHotPlane(SQLiteHotMixins):
    """The hot plane of the default ``sqlite`` mode (one machine, several processes).

    Safe to share between threads (each gets its own connection) and between processes
    opening the same file. Connections open lazily, so a bad path surfaces as
    :class:`~oqronkit.errors.BackendUnavailable` on first use.
    """

    name = "sqlite"
    transaction_domain: str | None = None
    signal_domain: str | None = None
    #: No broadcast (no cheap cross-process push on one file): a cache's L1 here is
    #: bounded by its short ``local_ttl`` instead.
    supports_broadcast = False

    def __init__(
        self, path: str, *, busy_timeout: float = BUSY_TIMEOUT_S, poll_interval: float = POLL_INTERVAL_S
    ) -> None:
        if path in ("", ":memory:") or path.startswith("file:"):
            # Each thread's connection would get its own private database.
            raise ConfigurationError(f"The SQLite hot plane needs a file path, got {path!r}; use mode 'memory' "
                                     "for an in-process plane.")
        self.path = path
        self._poll = poll_interval
        self._conns = SQLiteConnections(path, busy_timeout=busy_timeout, role="hot plane")
        self.joins_database: str | None = self._conns.database_url
        self._reset_process_state()

    def _reset_process_state(self) -> None:
        # Also run in a forked child: a lock held by a parent thread would never be
        # released in the child (the connections reset themselves).
        self._pid = os.getpid()
        self._changed = threading.Condition()
        self._versions: dict[tuple[Scope, str], int] = {}  # bumped per queue by _notify
        self._rate_checks = 0  # approximate (unlocked): only paces the pruning of rate states

    # -- lifecycle -------------------------------------------------------------------

    def ensure_ready(self) -> None:
        self._forked()
        self._conns.script("ensure_ready", _SCHEMA)  # one BEGIN IMMEDIATE ... COMMIT script

    def close(self) -> None:
        self._conns.close()
        with self._changed:
            self._changed.notify_all()  # waiters see the plane closed and return

    # -- broker ------------------------------------------------------------------------

    def signal(self, scope: Scope, queue: str, signals: Sequence[Signal], now: int) -> None:
        if not signals:
            return
        key = _key(scope, queue)
        with self._write("signal") as conn:
            seq = _reserve_seq(conn, key, sum(1 for s in signals if _is_ready(s, now)))
            rows = []
            for s in signals:
                seq += (ready := _is_ready(s, now))
                # A delayed job gets its ordering key when it is promoted.
                order, run_at = (_ord(seq, s.lifo), None) if ready else (0, s.run_at)
                rows.append((*key, s.job_id, s.priority, int(s.lifo), order, run_at))
            conn.executemany(_Q["insert_signal"], rows)
        self._notify(scope, queue)

    def claim(
        self, scope: Scope, queue: str, *, worker_id: str, limit: int, lease_ms: int, now: int
    ) -> list[Lease]:
        key = _key(scope, queue)
        if limit <= 0 or not self._read_one("claim", _Q["any_claimable"], (*key, now))[0]:
            return []
        with self._write("claim") as conn:
            self._promote(conn, key, now)
            return self._take(conn, key, limit, now + lease_ms, worker_id)

    def _promote(self, conn: sqlite3.Connection, key: tuple[str, str, str], now: int) -> None:
        _promote_due(conn, key, now)

    def _take(self, conn: sqlite3.Connection, key: tuple[str, str, str], limit: int, expires_at: int,
              worker_id: str) -> list[Lease]:
        """Lease up to ``limit`` ready jobs in claim order, inside the caller's write."""
        taken = conn.execute(_Q["take_ready"], (*key, limit)).fetchall() if limit > 0 else []
        if not taken:
            return []
        taken.sort(key=lambda row: (-row[1], row[2]))  # priority DESC, ord ASC
        first = _one(conn, _Q["bump_token"], (*key, len(taken)))[0] - len(taken) + 1
        leases = [Lease(row[0], first + i, expires_at) for i, row in enumerate(taken)]
        conn.executemany(_Q["insert_lease"], [(*key, lease.job_id, lease.token, expires_at, worker_id)
                                              for lease in leases])
        return leases

    def extend(
        self, scope: Scope, queue: str, leases: Sequence[Lease], *, lease_ms: int, now: int
    ) -> list[Lease]:
        if not leases:
            return []
        key, expires_at = _key(scope, queue), now + lease_ms
        with self._write("extend") as conn:
            held = set(conn.execute(_Q["renew_leases"], (*key, expires_at, _pairs(leases))))
            rest = [lease for lease in leases if (lease.job_id, lease.token) not in held]
            known: set[str] = set()
            if rest:  # usually every lease is still held: no second statement
                known = {row[0] for row in conn.execute(_Q["present"], (*key, _json(x.job_id for x in rest)))}
            # Leases the plane lost entirely (e.g. the file was replaced): re-create them so
            # the live worker keeps its job, and never hand their tokens out again.
            lost = {lease.job_id: lease.token for lease in reversed(rest) if lease.job_id not in known}
            if lost:
                conn.executemany(_Q["insert_lease"], [(*key, j, t, expires_at, "") for j, t in lost.items()])
                conn.execute(_Q["raise_token"], (*key, max(lost.values())))
                held.update(lost.items())
        return [Lease(x.job_id, x.token, expires_at) for x in leases if (x.job_id, x.token) in held]

    def ack(self, scope: Scope, queue: str, leases: Sequence[Lease]) -> set[str]:
        if not leases:
            return set()
        with self._write("ack") as conn:
            return {row[0] for row in conn.execute(_Q["ack_leases"], (*_key(scope, queue), _pairs(leases)))}

    def release(self, scope: Scope, queue: str, lease: Lease, signal: Signal, now: int) -> bool:
        if signal.job_id != lease.job_id:
            raise ValueError(f"release() puts back the leased job {lease.job_id!r}, not {signal.job_id!r}.")
        key = _key(scope, queue)
        with self._write("release") as conn:
            if conn.execute(_Q["drop_lease"], (*key, lease.job_id, lease.token)).rowcount != 1:
                return False
            order, run_at = (0, signal.run_at)
            if _is_ready(signal, now):
                order, run_at = _ord(_reserve_seq(conn, key, 1) + 1, signal.lifo), None
            conn.execute(_Q["place"], (*key, signal.job_id, signal.priority, int(signal.lifo), order, run_at))
        self._notify(scope, queue)
        return True

    def take_expired(self, scope: Scope, queue: str, *, now: int, limit: int) -> list[Lease]:
        if limit <= 0:
            return []
        with self._write("take_expired") as conn:
            rows = conn.execute(_Q["take_expired"], (*_key(scope, queue), now, limit)).fetchall()
        rows.sort(key=lambda row: (row[2], row[0]))  # expiry, then id: the memory plane's order
        return [Lease(job_id, token, expires_at, worker) for job_id, token, expires_at, worker in rows]

    def leases_of(self, scope: Scope, queue: str, worker_id: str) -> list[Lease]:
        with self._guard("leases_of") as conn:
            rows = conn.execute(_Q["leases_of"], (*_key(scope, queue), worker_id)).fetchall()
        return [Lease(job_id, token, expires, worker_id) for job_id, token, expires in rows]

    def remove(self, scope: Scope, queue: str, job_ids: Sequence[str]) -> set[str]:
        if not job_ids:
            return set()
        with self._write("remove") as conn:
            rows = conn.execute(_Q["remove_waiting"], (*_key(scope, queue), _json(job_ids))).fetchall()
        return {row[0] for row in rows}

    def promote(self, scope: Scope, queue: str, job_id: str, now: int) -> bool:
        key = _key(scope, queue)
        with self._write("promote") as conn:
            found = conn.execute(_Q["delayed_lifo"], (*key, job_id)).fetchall()
            if not found:
                return False
            conn.execute(_Q["make_ready"], (*key, job_id, _ord(_reserve_seq(conn, key, 1) + 1, found[0][0])))
        self._notify(scope, queue)
        return True

    def present(self, scope: Scope, queue: str, job_ids: Sequence[str]) -> set[str]:
        if not job_ids:
            return set()
        with self._guard("present") as conn:
            return {row[0] for row in conn.execute(_Q["present"], (*_key(scope, queue), _json(job_ids)))}

    def depths(self, scope: Scope, queue: str, now: int) -> QueueDepths:
        ready, due, delayed, active = self._read_one("depths", _Q["depths"], (*_key(scope, queue), now))
        return QueueDepths(ready + due, delayed, active)

    def next_due(self, scope: Scope, queue: str) -> int | None:
        due: int | None = self._read_one("next_due", _Q["next_due"], _key(scope, queue))[0]
        return due

    def wait(self, scope: Scope, queues: Sequence[str], timeout: float) -> bool:
        self._forked()  # before the condition variable, which a fork must not carry over
        deadline = time.monotonic() + max(timeout, 0.0)
        keys = [(scope, queue) for queue in queues]

        def bumped() -> bool:  # a signal/release/promote of this process touched our queues
            return [self._versions.get(k, 0) for k in keys] != seen

        with self._changed:
            seen = [self._versions.get(k, 0) for k in keys]
        params = (scope.project, scope.environment, _json(queues))
        with self._guard("wait") as conn:
            version = _one(conn, _Q["data_version"], ())[0]
            has_ready, first_due = _one(conn, _Q["wait_state"], params)
        while not has_ready and not self._conns.closed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with self._changed:  # same process: woken at once by _notify
                if self._changed.wait_for(bumped, min(remaining, self._poll)):
                    return True
            with self._guard("wait") as conn:  # other processes: a cheap poll
                current = _one(conn, _Q["data_version"], ())[0]
                if current == version:
                    continue  # nobody committed anything: no query needed
                version, (has_ready, due) = current, _one(conn, _Q["wait_state"], params)
            # A due time earlier than the caller could have planned for (it sized its
            # timeout from next_due before calling) is worth a wake-up too.
            if due is not None and (first_due is None or due < first_due):
                return True
        return bool(has_ready)

    def _notify(self, scope: Scope, queue: str) -> None:
        with self._changed:
            self._versions[(scope, queue)] = self._versions.get((scope, queue), 0) + 1
            self._changed.notify_all()

    # -- locks ---------------------------------------------------------------------------

    def acquire_lock(self, scope: Scope, name: str, owner: str, *, ttl_ms: int, now: int) -> bool:
        params = (scope.project, scope.environment, name, owner, now + ttl_ms, now)
        with self._write("acquire_lock") as conn:
            return bool(conn.execute(_Q["acquire_lock"], params).fetchall())

    def release_lock(self, scope: Scope, name: str, owner: str) -> bool:
        with self._write("release_lock") as conn:
            deleted = conn.execute(_Q["release_lock"], (scope.project, scope.environment, name, owner))
            return deleted.rowcount == 1

    def lock_owner(self, scope: Scope, name: str, now: int) -> str | None:
        with self._guard("lock_owner") as conn:
            rows = conn.execute(_Q["lock_owner"], (scope.project, scope.environment, name, now)).fetchall()
        return rows[0][0] if rows else None

    # -- counters and ephemeral keys ---------------------------------------------------

    def incr(self, scope: Scope, name: str, by: int = 1) -> int:
        with self._write("incr") as conn:
            return int(_one(conn, _Q["incr"], (scope.project, scope.environment, name, by))[0])

    def get_counters(self, scope: Scope, names: Sequence[str]) -> dict[str, int]:
        with self._guard("get_counters") as conn:
            found = dict(conn.execute(_Q["get_counters"], (scope.project, scope.environment, _json(names))))
        return {n: int(found.get(n, 0)) for n in names}

    def kv_set(self, scope: Scope, group: str, items: Mapping[str, str], *, ttl_ms: int, now: int) -> None:
        where = (scope.project, scope.environment, group)
        with self._write("kv_set") as conn:
            conn.execute(_Q["kv_prune"], (*where, now))  # keeps abandoned keys from piling up
            conn.executemany(_Q["kv_set"], [(*where, k, v, now + ttl_ms) for k, v in items.items()])

    def kv_get(self, scope: Scope, group: str, keys: Sequence[str], now: int) -> dict[str, str]:
        with self._guard("kv_get") as conn:
            params = (scope.project, scope.environment, group, _json(keys), now)
            return dict(conn.execute(_Q["kv_get"], params))

    def kv_all(self, scope: Scope, group: str, now: int) -> dict[str, str]:
        with self._guard("kv_all") as conn:
            return dict(conn.execute(_Q["kv_all"], (scope.project, scope.environment, group, now)))

    def kv_get_with_counters(
        self, scope: Scope, group: str, keys: Sequence[str], counters: Sequence[str], now: int
    ) -> tuple[dict[str, str], dict[str, int]]:
        # In process, so two statements cost no extra round trip.
        return self.kv_get(scope, group, keys, now), self.get_counters(scope, counters)

    def kv_prune(self, scope: Scope, group: str, now: int) -> int:
        with self._write("kv_prune") as conn:
            return conn.execute(_Q["kv_prune"], (scope.project, scope.environment, group, now)).rowcount

    def kv_delete(self, scope: Scope, group: str, keys: Sequence[str]) -> None:
        with self._write("kv_delete") as conn:
            conn.execute(_Q["kv_delete"], (scope.project, scope.environment, group, _json(keys)))

    # -- rate limits (sqlite_rates.py) ---------------------------------------------------

    def rate_hit(self, scope: Scope, request: RateRequest, now: int) -> RateAnswer:
        self._rate_checks += 1
        with self._write("rate_hit") as conn:
            if self._rate_checks % _RATE_PRUNE_EVERY == 0:  # abandoned keys never pile up
                sqlite_rates.prune(conn, now)
            return sqlite_rates.hit(conn, scope, request, now)

    def rate_drop(self, scope: Scope, name: str, key: str, fields: Sequence[str]) -> None:
        with self._write("rate_drop") as conn:
            sqlite_rates.edit(conn, scope, name, key, drop=fields)

    def rate_override(self, scope: Scope, name: str, key: str, limits: Sequence[int], *, ttl_ms: int,
                      now: int) -> None:
        with self._write("rate_override") as conn:
            sqlite_rates.edit(conn, scope, name, key, override=limits, ttl=ttl_ms, now=now)

    # -- connections -----------------------------------------------------------------

    def _read_one(self, action: str, sql: str, params: Sequence[Any]) -> tuple[Any, ...]:
        with self._guard(action) as conn:
            return _one(conn, sql, params)

    def _forked(self) -> None:
        if self._pid != os.getpid():
            self._reset_process_state()

    @contextmanager
    def _guard(self, action: str) -> Iterator[sqlite3.Connection]:
        """This thread's connection; driver errors become BackendUnavailable."""
        self._forked()
        with self._conns.guard(action) as conn:
            yield conn

    @contextmanager
    def _write(self, action: str) -> Iterator[sqlite3.Connection]:
        """One BEGIN IMMEDIATE transaction, committed on success, rolled back otherwise."""
        self._forked()
        with self._conns.write(action) as conn:
            yield conn


def _key(scope: Scope, queue: str) -> tuple[str, str, str]:
    return (scope.project, scope.environment, queue)


def _is_ready(signal: Signal, now: int) -> bool:
    return signal.run_at is None or signal.run_at <= now


def _ord(seq: int, lifo: bool | int) -> int:
    """The ordering key among equal priorities: enqueue order, or its reverse for LIFO."""
    return -seq if lifo else seq


def _reserve_seq(conn: sqlite3.Connection, key: tuple[str, str, str], count: int) -> int:
    """Reserve ``count`` sequence numbers; returns the one before the first reserved."""
    if count == 0:
        return 0  # nothing will be numbered, so the base does not matter
    return int(_one(conn, _Q["bump_seq"], (*key, count))[0]) - count


def _promote_due(conn: sqlite3.Connection, key: tuple[str, str, str], now: int) -> None:
    # A job that becomes due queues behind those already ready at its priority (a fresh
    # seq at promotion, as the memory plane does), keeping its priority and lifo flag.
    due = conn.execute(_Q["due_jobs"], (*key, now)).fetchall()
    if due:
        seq = _reserve_seq(conn, key, len(due))
        conn.executemany(
            _Q["make_ready"], [(*key, job_id, _ord(seq + i, lifo)) for i, (job_id, lifo) in enumerate(due, 1)]
        )


def _one(conn: sqlite3.Connection, sql: str, params: Sequence[Any]) -> tuple[Any, ...]:
    # fetchall, not fetchone: it steps the statement to its end, so no read snapshot
    # or half-run RETURNING statement is left open on the connection.
    return tuple(conn.execute(sql, params).fetchall()[0])


def _json(values: Iterable[str]) -> str:
    """A list of strings as one JSON array parameter (read by json_each in the SQL)."""
    return json.dumps(list(values))


def _pairs(leases: Sequence[Lease]) -> str:
    return json.dumps([[lease.job_id, lease.token] for lease in leases])
