"""The engine's lifecycle events as Django signals: ``job_enqueued``, ``job_started``,
``job_retried``, ``job_completed``, ``job_failed``, ``job_dead``, ``job_stalled`` and
``job_cancelled``, sent with ``sender`` = :class:`oqronkit.Queue` and the keyword
arguments ``queue`` (the queue's name), ``job`` and ``event`` (:class:`oqronkit.Event`).
Filter on ``queue``: Django matches a sender by identity, and a name read back from a
plane is an equal string, not the same object::

    from django.dispatch import receiver
    from oqronboard.signals import job_dead

    @receiver(job_dead)
    def page_someone(sender, queue, job, event, **kwargs):
        if queue == "payments": ...

Connected once, by the board app's ``ready()``, to the default registry's lifecycle
callbacks (``oqronkit.on``): every engine the bridge configures (``oqronboard.engine``:
``runworker``, the board's actions, a view's ``add``) uses that registry, so each signal is
sent once per event, in the process and on the thread the engine fires the event from
(see :mod:`oqronkit.lifecycle`). Receivers run through ``send_robust``: one that raises is
logged by Django (``django.dispatch``) and the others still run; none can break a worker.
"""

from __future__ import annotations

from django.dispatch import Signal

import oqronkit

job_enqueued = Signal()
job_started = Signal()
job_retried = Signal()
job_completed = Signal()
job_failed = Signal()
job_dead = Signal()
job_stalled = Signal()
job_cancelled = Signal()

SIGNALS: dict[str, Signal] = {
    "enqueued": job_enqueued, "started": job_started, "retried": job_retried, "completed": job_completed,
    "failed": job_failed, "dead": job_dead, "stalled": job_stalled, "cancelled": job_cancelled,
}
_connected = False


def connect() -> None:
    """Send the signals on the default registry's events (idempotent; from ``ready()``)."""
    global _connected
    if _connected:
        return
    _connected = True
    for name in SIGNALS:
        oqronkit.on(name, _send)


def _send(event: oqronkit.Event) -> None:
    SIGNALS[event.name].send_robust(sender=oqronkit.Queue, queue=event.queue, job=event.job, event=event)
