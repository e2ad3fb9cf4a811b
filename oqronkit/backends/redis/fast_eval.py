"""A lean client path for one hot, one-key script (the rate limiter's ``rate_hit``).

redis-py's path for one EVALSHA (command packing, a pool checkout and release, the reply
parser) costs more than the round trip itself, so a rate-limit check spends most of its
time in the client. Here each thread keeps its own plain socket to the configured Redis,
writes the command as one RESP frame (the constant parts built once) and reads the one
bulk-string reply itself.

Only plain TCP URLs whose options are all understood here take this path; TLS, unix
sockets, clusters, credential providers and any other option keep redis-py's path
(:func:`open_fast_eval` answers None). The rules are the normal path's:

* a reply ``NOSCRIPT`` means the script did not run: it is loaded through the normal
  client and the call sent once more; other replies saying it did not run (``READONLY``,
  ...) are retried by the caller's policy (``connection.not_run_retry``);
* a socket error or a timeout (the client's ``socket_timeout``) drops the connection and
  raises :class:`~oqronkit.errors.BackendUnavailable`, never retried (a check that may
  have run must not count twice);
* a connection the server closed while idle (restart, idle timeout) is noticed before
  sending and reopened, as redis-py's pool does at checkout;
* a forked child never uses a socket it inherited (a pid check drops it).
"""

from __future__ import annotations

import os
import select
import socket
import struct
import sys
import threading
import weakref
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import redis
from redis._parsers.base import BaseParser
from redis.commands.core import Script
from redis.retry import Retry

from ...errors import BackendUnavailable

#: Options of a redis:// URL (and of our pool) this path honours or may ignore: the rest
#: (TLS, keepalive, client names, credential providers, ...) keep redis-py's path.
_UNDERSTOOD = frozenset({
    "host", "port", "db", "username", "password", "socket_timeout", "socket_connect_timeout",
    "decode_responses", "retry", "protocol", "encoding", "encoding_errors",
    # redis-py's own bookkeeping, set on every pool.
    "himport_registry", "maint_notifications_pool_handler", "maint_notifications_config",
    "orig_host_address", "orig_socket_timeout", "orig_socket_connect_timeout",
})
_READ = 65536
_PID = os.getpid()


def _forked() -> None:
    global _PID
    _PID = os.getpid()


# Cheaper than a getpid() per call: the child learns its pid once, at the fork.
os.register_at_fork(after_in_child=_forked)


def _bulk(value: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(value), value)


@lru_cache(maxsize=1024)
def _encoded(tail: tuple[str, ...]) -> bytes:
    return b"".join(_bulk(part.encode()) for part in tail)


class _Conn:
    """One thread's socket, with a poller to notice that the server closed it. Closed
    when its thread ends (the thread-local drops it) or the plane closes."""

    __slots__ = ("__weakref__", "pid", "poll", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.poll = select.poll()
        self.poll.register(sock, select.POLLIN)
        self.pid = _PID

    def __del__(self) -> None:
        self.sock.close()


class FastEval:
    """EVALSHA of one one-key script over per-thread sockets. Thread-safe; each thread
    opens its connection on first use."""

    def __init__(self, client: redis.Redis, script: Script, where: str, action: str,
                 options: dict[str, Any], retry: Retry | None = None) -> None:
        self._client, self._script, self._where, self._action = client, script, where, action
        # The first attempt runs outside the policy (setting it up costs more than a
        # check's own Python); only errors it retries lead into it.
        self._retry = retry
        self._not_run: tuple[type[Exception], ...] = retry._supported_errors if retry is not None else ()
        self._host, self._port = str(options.get("host", "127.0.0.1")), int(options.get("port", 6379))
        self._db = int(options.get("db") or 0)
        self._username, self._password = options.get("username"), options.get("password")
        self._timeout = options.get("socket_timeout")
        self._connect_timeout = options.get("socket_connect_timeout") or self._timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: weakref.WeakSet[_Conn] = weakref.WeakSet()  # live threads' connections, for close()
        self._closed = False
        self._head = self._frame_head(script.sha)

    def _frame_head(self, sha: str) -> bytes:
        return _bulk(b"EVALSHA") + _bulk(sha.encode()) + _bulk(b"1")

    def bind(self, key_prefix: str, tail: tuple[str, ...]) -> Callable[[str, int, int], str]:
        """The script as a function of a key under ``key_prefix`` and two integer
        arguments, ``tail`` following them; what every call repeats (the prefix, the
        tail, the frame's count) is encoded here once. Its reply (a bulk string) comes
        back decoded, as the normal client's (``decode_responses``) would."""
        prefix, rest, count, run = key_prefix.encode(), _encoded(tail), b"*%d\r\n" % (6 + len(tail)), self._run

        def bound(key: str, first: int, second: int) -> str:
            encoded, a, b = prefix + key.encode(), b"%d" % first, b"%d" % second
            return run(count, b"$%d\r\n%s\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n%s"
                       % (len(encoded), encoded, len(a), a, len(b), b, rest))

        return bound

    def _run(self, count: bytes, body: bytes) -> str:
        try:
            try:
                return self._attempt(count, body).decode()
            except self._not_run:  # it did not run: the policy's retries, each after its backoff
                if self._retry is None:
                    raise
                return self._retry.call_with_retry(lambda: self._attempt(count, body), _ignore).decode()
        except redis.RedisError as exc:  # an error reply, as redis-py would have raised it
            raise BackendUnavailable(f"Redis at {self._where} failed during {self._action}: {exc}") from exc

    def _attempt(self, count: bytes, body: bytes) -> bytes:
        reply = self._send(count + self._head + body)
        if reply is None:  # NOSCRIPT: it did not run; load it and send once more
            self._reload()
            reply = self._send(count + self._head + body)
            if reply is None:
                raise redis.exceptions.NoScriptError("No matching script after loading it")
        return reply

    def _reload(self) -> None:
        try:
            sha = self._client.script_load(self._script.script)
        except redis.RedisError as exc:
            raise BackendUnavailable(f"Redis at {self._where} failed during {self._action}: {exc}") from exc
        self._script.sha, self._head = sha, self._frame_head(sha)

    def _send(self, frame: bytes) -> bytes | None:
        conn = self._conn()
        try:
            conn.sock.sendall(frame)
            data = conn.sock.recv(_READ)
            while True:
                reply = _parse(data)
                if reply is not None:
                    break
                more = conn.sock.recv(_READ)
                if not more:
                    raise ConnectionError("Connection closed by server.")
                data += more
        except _ErrorReply as exc:  # the whole line was read: the connection stays usable
            error = BaseParser.parse_error(str(exc))  # type: ignore[no-untyped-call]  # redis-py's own classes
            if isinstance(error, redis.exceptions.NoScriptError):
                return None
            raise error from None
        except (OSError, ValueError) as exc:
            self._drop(conn)
            timed_out = isinstance(exc, (TimeoutError, BlockingIOError))  # BlockingIOError: SO_RCVTIMEO's
            reason = "Timeout reading from socket" if timed_out else str(exc) or repr(exc)
            raise BackendUnavailable(f"Redis at {self._where} failed during {self._action}: {reason}") from exc
        return reply

    def _conn(self) -> _Conn:
        conn: _Conn | None = getattr(self._local, "conn", None)
        if conn is not None:
            if conn.pid == _PID and not self._closed and not conn.poll.poll(0):
                return conn
            # Inherited from the parent (never touch the parent's stream), or closed or
            # written to by the server while idle (a restart, an idle timeout): reopen.
            self._drop(conn)
        if self._closed:
            raise BackendUnavailable(f"The Redis hot plane for {self._where} is closed.")
        try:
            conn = _Conn(self._connect())
        except (OSError, ValueError) as exc:
            raise BackendUnavailable(f"Redis at {self._where} failed during {self._action}: "
                                     f"Error connecting to {self._host}:{self._port}: {exc}") from exc
        with self._lock:
            self._open.add(conn)
        self._local.conn = conn
        return conn

    def _connect(self) -> socket.socket:
        sock = socket.create_connection((self._host, self._port), timeout=self._connect_timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _set_timeout(sock, self._timeout)
            setup = []
            if self._username or self._password:  # as redis-py sends it
                password = (self._password or "").encode()
                auth = [b"AUTH", *([self._username.encode()] if self._username else []), password]
                setup.append(b"*%d\r\n" % len(auth) + b"".join(_bulk(part) for part in auth))
            if self._db:
                setup.append(b"*2\r\n" + _bulk(b"SELECT") + _bulk(str(self._db).encode()))
            for command in setup:  # one at a time: each answers +OK or an error line
                sock.sendall(command)
                line = _read_line(sock)
                if not line.startswith(b"+"):
                    raise ValueError(line[1:].decode("utf-8", "replace"))
        except BaseException:
            sock.close()
            raise
        return sock

    def _drop(self, conn: _Conn) -> None:
        self._local.conn = None
        with self._lock:
            self._open.discard(conn)
        # An inherited socket too: closing this process's descriptor (never shutdown())
        # leaves the parent's connection open.
        conn.sock.close()

    def close(self) -> None:
        """Close every thread's socket; later calls raise BackendUnavailable."""
        with self._lock:
            self._closed, conns = True, list(self._open)
            self._open.clear()
        for conn in conns:
            conn.sock.close()


def _set_timeout(sock: socket.socket, timeout: float | None) -> None:
    """The client's ``socket_timeout`` on ``sock``. On Linux the kernel keeps it
    (SO_RCVTIMEO, SO_SNDTIMEO) and the socket stays blocking: Python's own timeout
    would poll before every send and every receive, two system calls a check."""
    if timeout is None or timeout <= 0 or not sys.platform.startswith("linux"):
        sock.settimeout(timeout)  # none, or 0 (non-blocking): the kernel's 0 would mean "never"
        return
    whole = int(timeout)
    value = struct.pack("ll", whole, max(round((timeout - whole) * 1_000_000), 0 if whole else 1))
    sock.settimeout(None)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)


class _ErrorReply(Exception):
    """The server answered an error line (the command did not complete)."""


def _parse(data: bytes) -> bytes | None:
    """A bulk string's bytes, or None when more is to come; an error line raises."""
    end = data.find(b"\r\n")
    if end < 0:
        return None
    kind = data[:1]
    if kind == b"$":
        size = int(data[1:end])
        if size < 0:
            raise ValueError("Unexpected nil reply")
        if len(data) < end + 2 + size + 2:
            return None
        return data[end + 2:end + 2 + size]
    if kind == b"-":
        raise _ErrorReply(data[1:end].decode("utf-8", "replace"))
    raise ValueError(f"Unexpected reply {data[:40]!r}")


def _read_line(sock: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\r\n"):
        more = sock.recv(_READ)
        if not more:
            raise ConnectionError("Connection closed by server.")
        data += more
    return data


def _ignore(_error: Exception) -> None:
    return None


def open_fast_eval(client: Any, script: Script, where: str, *, retry: Retry | None = None,
                   action: str = "rate_hit") -> FastEval | None:
    """The lean path for ``script`` on ``client``'s server, or None where it does not
    apply (anything but a plain TCP connection with understood options)."""
    if type(client) is not redis.Redis:
        return None
    pool = client.connection_pool
    options = dict(pool.connection_kwargs)
    if pool.connection_class is not redis.Connection or set(options) - _UNDERSTOOD:
        return None
    return FastEval(client, script, where, action, options, retry)
