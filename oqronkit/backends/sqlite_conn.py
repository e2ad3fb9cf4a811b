"""Connections to one SQLite file, shared by the durable store and the hot plane.

One connection per file per thread: the store and the plane of one process (and any
other store or plane it opens on the same file) use the same per-thread connection,
and their writers queue on one ``threading.Lock`` per file, so threads of this process
wait on a Python lock (woken at once) rather than on SQLite's busy handler (which
sleeps and retries). Across processes the ``BEGIN IMMEDIATE`` write lock and the busy
timeout still serialise writers.

Every connection runs in WAL mode (readers and the single writer never block each
other) with ``synchronous = NORMAL``. A forked child never uses its parent's
connections (SQLite forbids carrying one across fork): it forgets them, unclosed, and
opens its own; a finished thread's connection is closed when the next one is opened.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from ..errors import BackendUnavailable
from .borrowed import borrowed
from .sqlfiles import load_queries
from .sqlite_compat import connection_factory

BUSY_TIMEOUT_S = 10.0
MIN_SQLITE = (3, 35, 0)  # RETURNING; UPSERT, row values and json_each are older

_Q = load_queries("oqronkit.backends", "sql/sqlite/queries.sql")
# The objects a schema script creates (every statement of ours is CREATE ... IF NOT EXISTS).
_CREATED = re.compile(r"CREATE\s+(?:UNIQUE\s+)?(?:TABLE|INDEX)\s+IF\s+NOT\s+EXISTS\s+(\w+)", re.IGNORECASE)


class SQLiteConnections:
    """One store's or plane's handle on the shared connections to its file.

    ``role`` ("durable store", "hot plane") names the user in errors. Nothing is
    opened here: the first :meth:`connection` of each thread opens that thread's
    connection, so a bad path surfaces as :class:`~oqronkit.errors.BackendUnavailable`
    on first use. :meth:`close` ends this handle; the connections close with the last
    handle on the file.
    """

    def __init__(self, path: str, *, busy_timeout: float = BUSY_TIMEOUT_S, role: str) -> None:
        self.path = path
        #: The engine URL of the file: an application's connection lent for it is used instead.
        self.database_url = f"sqlite:///{path}"
        self.role = role
        self.closed = False
        self.file = _attach(path, busy_timeout)

    def connection(self, *, own: bool = False) -> sqlite3.Connection:
        """This thread's connection to the file, or (unless ``own``) the application's lent for it."""
        if self.closed:
            raise self._closed_error()
        lent: sqlite3.Connection | None = None if own else borrowed(self.database_url)
        if lent is not None:
            return lent
        return self.file.connection(self)

    @contextmanager
    def guard(self, action: str, *, own: bool = False) -> Iterator[sqlite3.Connection]:
        """This thread's connection (or the lent one); driver errors become BackendUnavailable."""
        conn = self.connection(own=own)
        try:
            yield conn
        except sqlite3.Error as exc:
            raise BackendUnavailable(f"SQLite {self.role} {action} on {self.path!r} failed: {exc}") from exc

    @contextmanager
    def write(self, action: str) -> Iterator[sqlite3.Connection]:
        """One BEGIN IMMEDIATE transaction, committed on success, rolled back otherwise;
        on a lent connection, statements of the application's open transaction."""
        if borrowed(self.database_url) is not None:
            with self.guard(action) as lent:
                yield lent
            return
        # The connection first: in a forked child it resets the inherited write lock.
        with self.guard(action, own=True) as conn, self.file.write_lock:
            conn.execute(_Q["begin_immediate"])
            try:
                yield conn
                conn.execute(_Q["commit"])
            except BaseException:
                # Also after a failed COMMIT: a transaction left open would make every
                # later BEGIN on this thread's connection fail.
                rollback(conn)
                raise

    def script(self, action: str, sql: str) -> None:
        """Run a schema script that is its own ``BEGIN IMMEDIATE ... COMMIT`` transaction
        (never on a lent connection: a script commits whatever transaction it finds open),
        unless every table and index it creates exists: then it needs no write lock, which
        an application's open transaction may hold (``migrate`` made the tables)."""
        with self.guard(action, own=True) as conn:
            existing = {name for (name,) in conn.execute(_Q["schema_object_names"])}
        if set(_CREATED.findall(sql)) <= existing:
            return
        if borrowed(self.database_url) is not None:
            raise BackendUnavailable(
                f"The engine's tables are missing from {self.path!r}, and an application's transaction holds "
                "its write lock: create them first (`manage.py migrate` does)."
            )
        with self.guard(action, own=True) as conn, self.file.write_lock:
            try:
                conn.executescript(sql)
            except BaseException:
                rollback(conn)
                raise

    def close(self) -> None:
        with _files_lock:
            if self.closed:
                return
            self.closed = True
        self.file.release()

    def _closed_error(self) -> BackendUnavailable:
        return BackendUnavailable(f"The SQLite {self.role} on {self.path!r} is closed.")


class _File:
    """This process's connections to one file (one per thread, each with the thread
    that opened it) and the lock its writers queue on."""

    def __init__(self, key: tuple[str, float], path: str, busy_timeout: float) -> None:
        self.key = key
        self.path = path
        self.busy_timeout = busy_timeout
        self.users = 0  # open handles; guarded by _files_lock
        self.closed = False
        self.reset()

    def reset(self) -> None:
        # Also run in a forked child: connections must not cross a fork, and a lock held
        # by a parent thread would never be released in the child.
        self.pid = os.getpid()
        self.local = threading.local()
        self.lock = threading.Lock()
        self.connections: list[tuple[threading.Thread, sqlite3.Connection]] = []
        self.write_lock = threading.Lock()

    def connection(self, user: SQLiteConnections) -> sqlite3.Connection:
        if self.pid != os.getpid():
            self.reset()
        conn: sqlite3.Connection | None = getattr(self.local, "conn", None)
        if conn is not None:
            return conn
        conn = _open(self.path, self.busy_timeout, user.role)
        with self.lock:
            if self.closed:
                conn.close()
                raise user._closed_error()
            # A thread's connection outlives the thread (threading.local drops only our
            # reference); close those here so short-lived threads do not leak files.
            alive = []
            for thread, old in self.connections:
                if thread.is_alive():
                    alive.append((thread, old))
                else:
                    with suppress(sqlite3.Error):
                        old.close()
            self.connections = [*alive, (threading.current_thread(), conn)]
        self.local.conn = conn
        return conn

    def release(self) -> None:
        """One handle closed; the last one closes every connection for good (a later
        handle on the same file gets a fresh registry)."""
        with _files_lock:
            self.users -= 1
            if self.users > 0:
                return
            if _files.get(self.key) is self:
                del _files[self.key]
        with self.lock:
            self.closed = True
            connections, self.connections = self.connections, []
        for _thread, conn in connections:
            with suppress(sqlite3.Error):
                conn.close()


# The registries of this process, one per file and busy timeout; an entry lives as long
# as a store or plane holds it.
_files: weakref.WeakValueDictionary[tuple[str, float], _File] = weakref.WeakValueDictionary()
_files_lock = threading.Lock()


def _reset_files_lock() -> None:
    global _files_lock
    _files_lock = threading.Lock()


os.register_at_fork(after_in_child=_reset_files_lock)


def _attach(path: str, busy_timeout: float) -> _File:
    key = (os.path.abspath(path), float(busy_timeout))
    with _files_lock:
        file = _files.get(key)
        if file is None:
            file = _files[key] = _File(key, path, busy_timeout)
        file.users += 1
        return file


def _open(path: str, busy_timeout: float, role: str) -> sqlite3.Connection:
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise BackendUnavailable(
            f"Cannot open the SQLite database {path!r}: the directory {directory!r} does "
            "not exist. Create it, or point the database URL at an existing folder."
        )
    if sqlite3.sqlite_version_info < MIN_SQLITE:
        raise BackendUnavailable(
            f"The SQLite library is {sqlite3.sqlite_version}; the {role} on {path!r} "
            f"needs {'.'.join(map(str, MIN_SQLITE))} or newer."
        )
    try:
        # isolation_level=None: the sqlite3 module never opens transactions behind
        # our back; check_same_thread=False only so close() may close every
        # connection (each is otherwise used by its own thread alone); room in the
        # statement cache for the store's and the plane's statements together.
        conn = sqlite3.connect(
            path, timeout=busy_timeout, isolation_level=None, check_same_thread=False, cached_statements=256,
            factory=connection_factory(),
        )
    except sqlite3.Error as exc:
        raise BackendUnavailable(f"Cannot open the SQLite database {path!r}: {exc}") from exc
    try:
        mode = conn.execute(_Q["journal_mode_wal"]).fetchall()[0][0]
        conn.execute(_Q["synchronous_normal"])
    except sqlite3.Error as exc:
        conn.close()
        raise BackendUnavailable(f"Cannot configure the SQLite database {path!r}: {exc}") from exc
    if str(mode).lower() != "wal":
        conn.close()
        raise BackendUnavailable(
            f"The SQLite database {path!r} cannot use WAL journaling (got {mode!r}); "
            "several processes share this file, so put it on a local filesystem."
        )
    return conn


def rollback(conn: sqlite3.Connection) -> None:
    # Some errors (SQLITE_FULL, IOERR) already rolled back; the original error is the
    # one worth raising, so a failed rollback is not allowed to replace it.
    if conn.in_transaction:
        with suppress(sqlite3.Error):
            conn.execute(_Q["rollback"])
