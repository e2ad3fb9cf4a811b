"""Whether one of Django's task signals would reach anyone: the worker builds the
``TaskResult`` a signal carries, and sends it, only then.

Django connects a receiver of its own to each task signal (``django/tasks/signals.py``),
whose only effect is one record on the ``django.tasks`` logger; the board's settings keep
that logger at WARNING unless DEBUG. A signal whose receivers are only those, sent at a
level the logger drops, would change nothing: it is not sent. Any other receiver (a
function, a method, one connected with a ``dispatch_uid``) gets every signal.
"""

from __future__ import annotations

from django.dispatch import Signal
from django.tasks import signals as task_signals

# Django's receivers are connected without a dispatch_uid: their key is id(function).
_LOGGING_RECEIVERS = frozenset(id(receiver) for receiver in (
    task_signals.log_task_enqueued, task_signals.log_task_started, task_signals.log_task_finished))


def would_reach_anyone(signal: Signal, level: int) -> bool:
    """True when ``signal`` has a receiver other than Django's logging one, or that one
    would log at ``level`` (the level of the record it makes for this result)."""
    receivers = signal.receivers
    if not receivers:
        return False
    for entry in receivers:  # ((receiver key, sender key), receiver, ...)
        if entry[0][0] not in _LOGGING_RECEIVERS:
            return True
    return task_signals.logger.isEnabledFor(level)
