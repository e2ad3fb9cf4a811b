"""Waking a topic's dispatchers when a publish commits, over the hot plane's broadcast.

A publish asks for a wake of its topic once its appends have committed (one per
``publish``/``publish_many`` call, never one per message). The wake is sent by one
daemon thread per process and hot plane, which coalesces the requests of a burst into
one broadcast per topic: the publisher never waits on it and a failed wake never fails
a publish. A dispatcher listens on each of its topics' channels and waits on the wake,
with its poll kept as the fallback: a wake lost (the hot plane down, a process exiting
before its sender ran, a plane that cannot broadcast such as SQLite's) costs latency,
never a message, because the poll finds whatever the wake would have announced.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from collections.abc import Iterable

from ..backends.protocols import BroadcastSubscription
from ..hot import HotPlaneFacade
from ..planes import Planes

logger = logging.getLogger(__name__)
#: A sender thread with nothing to send for this long exits (a new publish restarts it).
SENDER_IDLE_S = 5.0
#: How long a dispatcher waits for its wake subscriptions before its first pass.
READY_WAIT_S = 2.0
#: How often a waiting dispatcher looks at its stop event.
STOP_SLICE_S = 0.1
_SENDERS: weakref.WeakKeyDictionary[HotPlaneFacade, WakeSender] = weakref.WeakKeyDictionary()
_SENDERS_LOCK = threading.Lock()


def channel(topic: str) -> str:
    """The broadcast channel of a topic's wakes (the cache's channels are ``cache:*``)."""
    return f"topic:{topic}"


def request(planes: Planes, topic: str) -> None:
    """Wake the dispatchers of ``topic`` soon (after the caller's publish committed);
    never raises (a hot plane that cannot be opened now only costs latency)."""
    try:
        hot = planes.hot
    except Exception:  # publishing needs only the durable plane: the poll covers this wake
        logger.debug("no hot plane to wake the dispatchers of %s", topic, exc_info=True,
                     extra={"action": "topic.wake_failed"})
        return
    if not hot.supports_broadcast:
        return
    sender = _SENDERS.get(hot)
    if sender is None:
        with _SENDERS_LOCK:
            sender = _SENDERS.get(hot)
            if sender is None:
                sender = _SENDERS[hot] = WakeSender(hot)
    sender.request(topic)


class WakeSender:
    """The topics waiting for a wake, and the thread that broadcasts them."""

    def __init__(self, hot: HotPlaneFacade) -> None:
        self._hot = hot
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._cond = threading.Condition()
        self._pending: set[str] = set()
        self._thread: threading.Thread | None = None

    def request(self, topic: str) -> None:
        if self._pid != os.getpid():
            self._reset()  # a forked child inherits the parent's sender but not its thread
        with self._cond:
            self._pending.add(topic)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="oqronkit-topic-wake", daemon=True)
                self._thread.start()
                _AT_EXIT.add(self)
            self._cond.notify()

    def flush(self, timeout: float) -> None:
        """Wait until the wakes asked for so far are sent (at most ``timeout``)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending and self._thread is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                self._cond.wait(min(remaining, 0.05))

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._cond.wait_for(lambda: self._pending, SENDER_IDLE_S):
                    self._thread = None
                    return
                topics = sorted(self._pending)
                self._pending.clear()
            for topic in topics:
                self._send(topic)
            with self._cond:
                self._cond.notify_all()  # flush() waits for an empty set

    def _send(self, topic: str) -> None:
        try:
            self._hot.broadcast(channel(topic), "")
        except Exception:  # best effort: the dispatchers' poll finds the messages anyway
            logger.debug("could not wake the dispatchers of %s", topic, exc_info=True,
                         extra={"action": "topic.wake_failed"})


class _AtExit:
    """Send the wakes still pending when the interpreter exits (a publish-and-exit script)."""

    def __init__(self) -> None:
        self._senders: weakref.WeakSet[WakeSender] = weakref.WeakSet()
        atexit.register(self.flush)

    def add(self, sender: WakeSender) -> None:
        self._senders.add(sender)

    def flush(self) -> None:
        for sender in list(self._senders):
            sender.flush(1.0)


_AT_EXIT = _AtExit()


class Wakeup:
    """What a dispatcher waits on: set by a wake of any of its topics, or by a possible
    loss of wakes (a reconnect), so it looks again."""

    def __init__(self, hot: HotPlaneFacade, topics: Iterable[str]) -> None:
        self._event = threading.Event()
        self._subs: list[BroadcastSubscription] = []
        for topic in sorted(set(topics)):
            try:
                sub = hot.listen(channel(topic), self._woken)
            except Exception as exc:  # the hot plane is down now: poll until the worker restarts
                logger.warning("topic %s: no wake on publish (%s); polling", topic, exc,
                               extra={"action": "topic.wake_unavailable"})
                continue
            if sub is not None:
                self._subs.append(sub)

    @property
    def listening(self) -> bool:
        """True when some wake can arrive (the plane broadcasts and we subscribed)."""
        return bool(self._subs)

    def _woken(self, _message: str | None) -> None:
        self._event.set()

    def wait_ready(self, timeout: float = READY_WAIT_S) -> None:
        """Wait until every subscription is confirmed (at most ``timeout``), so a publish
        that follows the first pass wakes us."""
        deadline = time.monotonic() + timeout
        for sub in self._subs:
            sub.ready.wait(max(0.0, deadline - time.monotonic()))

    def clear(self) -> None:
        """Forget the wakes so far (called before a pass, which sees their messages)."""
        self._event.clear()

    def wait(self, timeout: float, stop: threading.Event) -> None:
        """Sleep until a wake, ``stop``, or ``timeout`` (the poll)."""
        deadline = time.monotonic() + timeout
        while not stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._event.wait(min(remaining, STOP_SLICE_S)):
                return

    def close(self) -> None:
        for sub in self._subs:
            sub.close()
        self._subs.clear()
