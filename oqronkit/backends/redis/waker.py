"""Cross-process wake-ups for :meth:`RedisHotPlane.wait`, over Redis pub/sub.

Why pub/sub rather than a wake-up list that waiters BLPOP: a PUBLISH reaches every
process waiting on the queue, where a list push wakes exactly one of them (the others
would sleep out their poll timeout while jobs wait); one connection per process serves
every waiting thread and every queue, where BLPOP ties up a connection per waiting
thread; and nothing is left behind in the keyspace (no stale wake-up tokens). The
scripts that make a job ready (signal, release, promote) PUBLISH on the queue's channel
in the same atomic step, so Redis sends the message after the job is claimable. On a
Redis Cluster they SPUBLISH instead (the channel carries the queue's hash tag, so the
message stays in the queue's shard) and the listener SSUBSCRIBEs on each channel's
master (:mod:`.sharded`); a failover there is a reconnect like any other.

One listener thread per process owns the reading side. It counts messages per channel
(a version); ``wait`` notes the versions, checks the queues for ready jobs, then sleeps
until a version moves. A message published after the check always moves a version the
waiter noted before it, so no wake-up falls between the check and the sleep. Messages
are lost while the connection is down; on every reconnect the listener moves all
versions (a spurious wake-up is allowed) so waiters look again, and waiters never sleep
past their own timeout, so a lost message costs at most one poll interval.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from .connection import Client
from .sharded import Subscriber, open_pubsub

#: The listener wakes this often to notice close().
_SLICE_S = 0.5
_RECONNECT_BASE_S = 0.05
_RECONNECT_CAP_S = 1.0


class Waker:
    """Per-channel message counts, kept current by a daemon listener thread."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._changed = threading.Condition()
        self._versions: dict[str, int] = {}
        self._wanted: set[str] = set()
        self._confirmed: set[str] = set()
        # Serialises SUBSCRIBE sends and (re)creating the PubSub; the listener reads
        # without it (redis-py supports sending from one thread while another reads).
        self._sub_lock = threading.Lock()
        self._pubsub: Subscriber | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    def watch(self, channels: Sequence[str], deadline: float) -> list[int]:
        """Subscribe to ``channels`` (waiting until Redis confirms, at most until
        ``deadline``) and return their current versions. Raises the driver's error when
        the SUBSCRIBE cannot be sent."""
        with self._changed:
            new = [channel for channel in channels if channel not in self._wanted]
            self._wanted.update(new)
        if new or self._thread is None:
            self._subscribe(new)
        with self._changed:
            self._changed.wait_for(
                lambda: self._closed or self._confirmed.issuperset(channels),
                max(0.0, deadline - time.monotonic()),
            )
            return [self._versions.get(channel, 0) for channel in channels]

    def wait_changed(self, channels: Sequence[str], seen: list[int], deadline: float) -> bool:
        """Sleep until a message moves one of the ``seen`` versions (True) or the
        deadline passes (False)."""
        def moved() -> bool:
            return self._closed or [self._versions.get(c, 0) for c in channels] != seen

        with self._changed:
            return self._changed.wait_for(moved, max(0.0, deadline - time.monotonic())) and not self._closed

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        with self._sub_lock:  # every close of a PubSub happens under this lock
            self._drop(self._pubsub)  # the listener's read fails at once and it sees _closed
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=_SLICE_S * 4)

    # -- the listener ----------------------------------------------------------------

    def _subscribe(self, channels: list[str]) -> Subscriber | None:
        """SUBSCRIBE ``channels`` on the current PubSub, or open one subscribed to every
        wanted channel; start the listener the first time. Raises the driver's error."""
        with self._sub_lock:
            if self._closed:
                return None
            pubsub = self._pubsub
            try:
                if pubsub is None:
                    pubsub = self._pubsub = open_pubsub(self._client)
                    with self._changed:
                        channels = sorted(self._wanted)
                if channels:
                    pubsub.subscribe(*channels)
            except Exception:
                self._drop(pubsub)
                raise
            if self._thread is None:
                self._thread = threading.Thread(target=self._listen, name="oqronkit-redis-waker", daemon=True)
                self._thread.start()
            return pubsub

    def _drop(self, pubsub: Subscriber | None) -> None:
        """Forget a broken PubSub (called with _sub_lock held)."""
        if pubsub is None:
            return
        if self._pubsub is pubsub:
            self._pubsub = None
        try:
            pubsub.close()
        except Exception:  # closing a broken connection may fail in many ways; it is gone either way
            pass

    def _listen(self) -> None:
        backoff = _RECONNECT_BASE_S
        while not self._closed:
            try:
                pubsub = self._pubsub or self._subscribe([])
            except Exception:  # still down: keep trying, ever more slowly
                time.sleep(backoff)
                backoff = min(backoff * 2, _RECONNECT_CAP_S)
                continue
            if pubsub is None:
                continue
            try:
                message = pubsub.get_message(timeout=_SLICE_S)
            except Exception:
                # A dropped connection (RedisError, OSError), or close() pulling the
                # socket from under the read (RuntimeError, ValueError, ...): the thread
                # must survive every one of them.
                self._lost(pubsub)
                if not self._closed:  # a read failing at once again must not spin
                    time.sleep(backoff)
                    backoff = min(backoff * 2, _RECONNECT_CAP_S)
                continue
            backoff = _RECONNECT_BASE_S
            if message is not None:
                self._deliver(message)

    def _lost(self, pubsub: Subscriber) -> None:
        with self._sub_lock:
            self._drop(pubsub)
        with self._changed:
            # Messages sent while we were away are gone: let every waiter look again.
            self._confirmed.clear()
            for channel in self._wanted:
                self._versions[channel] = self._versions.get(channel, 0) + 1
            self._changed.notify_all()

    def _deliver(self, message: dict[str, object]) -> None:
        kind, channel = message.get("type"), message.get("channel")
        if not isinstance(channel, str):
            return
        with self._changed:
            if kind == "subscribe":
                self._confirmed.add(channel)
            elif kind == "message":
                self._versions[channel] = self._versions.get(channel, 0) + 1
            else:
                return
            self._changed.notify_all()
