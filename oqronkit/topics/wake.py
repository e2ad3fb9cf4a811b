"""Waking a topic's dispatchers when a publish commits, over the hot plane's broadcast.

A publish sends a wake of its topic once its appends have committed (one per
``publish``/``publish_many`` call, never one per message; a failed wake never fails the
publish). Where the hot plane broadcasts in the durable plane's database (postgres
mode), each append's transaction carries its NOTIFY instead, sent by the server at commit.
A dispatcher listens on each of its topics' channels and waits on the wake,
with its poll kept as the fallback: a wake lost (the hot plane down; SQLite's plane
cannot broadcast) costs latency, never a message, because the poll finds whatever the
wake would have announced.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Iterable

from ..backends.protocols import BroadcastSubscription
from ..hot import HotPlaneFacade
from ..planes import Planes

logger = logging.getLogger(__name__)
#: After a wake failed, publishes send none for this long (the dispatchers poll meanwhile).
QUIET_AFTER_FAILURE_S = 5.0
#: How long a dispatcher waits for its wake subscriptions before its first pass.
READY_WAIT_S = 2.0
#: How often a waiting dispatcher looks at its stop event.
STOP_SLICE_S = 0.1
_QUIET_UNTIL: weakref.WeakKeyDictionary[Planes, float] = weakref.WeakKeyDictionary()  # by engine


def channel(topic: str) -> str:
    """The broadcast channel of a topic's wakes (the cache's channels are ``cache:*``)."""
    return f"topic:{topic}"


def at_commit(planes: Planes, topic: str) -> str | None:
    """The channel for the durable append to notify in its own transaction, where the
    hot plane broadcasts within the durable plane's database (postgres mode: the wake
    costs no round trip of its own); None: call :func:`request` after the append."""
    if _QUIET_UNTIL.get(planes, 0.0) > time.monotonic():
        return None
    try:
        hot = planes.hot
    except Exception:  # request() will not try again for a while either
        _quiet(planes, topic)
        return None
    domain = hot.plane.transaction_domain
    if hot.supports_broadcast and domain is not None and domain == planes.durable.store.transaction_domain:
        return channel(topic)
    return None


def request(planes: Planes, topic: str) -> None:
    """Wake the dispatchers of ``topic`` (the caller's publish committed), from the
    caller's thread: a thread hop per publish cost single publishes more than the
    broadcast itself. Never raises; after a failure (the hot plane down, or not opening)
    it sends nothing for :data:`QUIET_AFTER_FAILURE_S`, so an outage slows one publish in
    that time, not every one."""
    if _QUIET_UNTIL.get(planes, 0.0) > time.monotonic():
        return
    try:
        hot = planes.hot
        if hot.supports_broadcast:
            hot.broadcast(channel(topic), "")
    except Exception:  # best effort: the dispatchers' poll finds the messages anyway
        _quiet(planes, topic)


def _quiet(planes: Planes, topic: str) -> None:
    _QUIET_UNTIL[planes] = time.monotonic() + QUIET_AFTER_FAILURE_S
    logger.debug("could not wake the dispatchers of %s", topic, exc_info=True, extra={"action": "topic.wake_failed"})


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
