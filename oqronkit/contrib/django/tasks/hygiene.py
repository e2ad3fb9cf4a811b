"""A worker thread's database connections after a task, as Django's request cycle
handles a request's (``close_old_connections``): one that is broken or past
``CONN_MAX_AGE`` is not kept for the next task.

Paid only by a thread that has opened a connection: Django's ``connection_created`` marks
the thread, and the mark stays while one of its connections stays open (``CONN_MAX_AGE``
above 0), so every later task still checks it. A task that never touches the database
costs one thread-local read.
"""

from __future__ import annotations

import threading
from typing import Any

from django.db import close_old_connections, connections
from django.db.backends.signals import connection_created


class _ThreadState(threading.local):
    may_hold_connection = False  # a class default: reading it raises nothing in a fresh thread


_thread = _ThreadState()


def _opened(sender: Any, connection: Any, **kwargs: Any) -> None:
    _thread.may_hold_connection = True


connection_created.connect(_opened, dispatch_uid="oqronkit.contrib.django.tasks.hygiene")


def after_task() -> None:
    """Close this thread's connections that are unusable or too old (none opened: nothing to do)."""
    if not _thread.may_hold_connection:
        return
    close_old_connections()
    _thread.may_hold_connection = any(conn.connection is not None for conn in connections.all(initialized_only=True))
