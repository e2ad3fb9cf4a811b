"""The engine's lifecycle events as Django signals: ``job_enqueued``, ``job_started``,
``job_retried``, ``job_completed``, ``job_failed``, ``job_dead``, ``job_stalled`` and
``job_cancelled``, sent with ``sender`` = :class:`oqronkit.Queue` and the keyword
arguments ``queue`` (the queue's name), ``job`` and ``event`` (:class:`oqronkit.Event`).
Filter on ``queue``: Django matches a sender by identity, and a name read back from a
plane is an equal string, not the same object::

    from django.dispatch import receiver
    from oqronkit.contrib.django.signals import job_dead

    @receiver(job_dead)
    def page_someone(sender, queue, job, event, **kwargs):
        if queue == "payments": ...

Enabled once, by the integration app's ``ready()``: from then on, a signal with receivers has
a callback on the default registry's lifecycle events (``oqronkit.on``), added when its
first receiver connects and removed when its last one disconnects. A registered callback
hands every event to the engine's signals thread, so a worker whose events nobody
receives must not have one. Every engine the bridge configures (``oqronkit.contrib.django.engine``:
``runworker``, the board's actions, a view's ``add``) uses that registry, so each signal is
sent once per event, in the process and on the thread the engine fires the event from
(see :mod:`oqronkit.lifecycle`). Receivers run through ``send_robust``: one that raises is
logged by Django (``django.dispatch``) and the others still run; none can break a worker.
"""

from __future__ import annotations

import threading
from typing import Any

from django.dispatch import Signal

import oqronkit
from oqronkit.queues.queue import default_registry


class LifecycleSignal(Signal):
    """A Django signal sent on one engine lifecycle event, while it has receivers."""

    def __init__(self, event: str) -> None:
        super().__init__()
        self.event = event
        self._forwarding = False
        self._forward_lock = threading.Lock()

    def connect(self, receiver: Any, sender: Any = None, weak: bool = True, dispatch_uid: Any = None) -> None:
        super().connect(receiver, sender=sender, weak=weak, dispatch_uid=dispatch_uid)
        self.follow_receivers()

    def disconnect(self, receiver: Any = None, sender: Any = None, dispatch_uid: Any = None) -> bool:
        disconnected = super().disconnect(receiver, sender=sender, dispatch_uid=dispatch_uid)
        self.follow_receivers()
        return disconnected

    def follow_receivers(self) -> None:
        """Register the engine callback while this signal has receivers (once the bridge
        is enabled), unregister it when it has none."""
        with self._forward_lock:
            wanted = _enabled and bool(self.receivers)
            if wanted and not self._forwarding:
                oqronkit.on(self.event, self._send)
            elif self._forwarding and not wanted:
                default_registry.listeners.remove(self.event, self._send)
            self._forwarding = wanted

    @property
    def forwarding(self) -> bool:
        """True while the engine calls this signal back on its event."""
        return self._forwarding

    def _send(self, event: oqronkit.Event) -> None:
        self.send_robust(sender=oqronkit.Queue, queue=event.queue, job=event.job, event=event)


job_enqueued = LifecycleSignal("enqueued")
job_started = LifecycleSignal("started")
job_retried = LifecycleSignal("retried")
job_completed = LifecycleSignal("completed")
job_failed = LifecycleSignal("failed")
job_dead = LifecycleSignal("dead")
job_stalled = LifecycleSignal("stalled")
job_cancelled = LifecycleSignal("cancelled")

SIGNALS: dict[str, LifecycleSignal] = {
    "enqueued": job_enqueued, "started": job_started, "retried": job_retried, "completed": job_completed,
    "failed": job_failed, "dead": job_dead, "stalled": job_stalled, "cancelled": job_cancelled,
}
_enabled = False

#: Sent after an operator changed state outside a web request (``manage.py oqron retry``,
#: ``pause``, ...), with ``project`` and ``environment``: the board refreshes its shared
#: cache of that scope.
scope_changed = Signal()


def connect() -> None:
    """Send the signals on the default registry's events (idempotent; from ``ready()``)."""
    global _enabled
    _enabled = True
    for signal in SIGNALS.values():
        signal.follow_receivers()
